"""libvirtd dies and comes back under a running agent.

The agent (libvirt driver, in the embedded plane) talks to a real libvirtd
over its UNIX socket: a private one, started by ``tools/test-services.sh
libvirtd DIR start`` for this test alone (session mode, as user
libvirt-qemu), so that killing it disturbs nobody else's libvirt. The
daemon hosts libvirt's test driver (``test+unix:///default``): no QEMU, the
test's wire is the real one (RPC, keepalive, the close callback). Its
domains live in the daemon's memory, so they are gone after the restart,
like a host whose guests died with it.

While a task waits on a frozen libvirtd, the daemon is killed and started
again. The agent must reconnect by itself, that task must end (done, or
failed saying the libvirt connection was lost), power reports and
heartbeats must keep coming, a new build must work, and a domain destroyed
behind the agent's back must be reported from its lifecycle event.
Skipped, with the reason, when the private libvirtd cannot run here.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import uuid as uuidlib

import pytest
from oslo_config import cfg

from common import conf as tconf
from common import context
from common import rpc
from common import states
from common.states import power
from common.states import vm
from conductor import embedded
from tests.functional import conftest as functional

libvirt = pytest.importorskip('libvirt')

from compute_agent.virt.libvirt import LibvirtDriver  # noqa: E402

HOST = 'lvr'
TIMEOUT = 30.0
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'tools', 'test-services.sh')


class PrivateLibvirtd:
    """``tools/test-services.sh libvirtd DIR start|kill|stop``."""

    def __init__(self, directory):
        self.dir = directory

    def _run(self, what):
        return subprocess.run([SCRIPT, 'libvirtd', self.dir, what],
                              capture_output=True, text=True, timeout=90,
                              check=False)

    def start(self):
        done = self._run('start')
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def kill(self):
        done = self._run('kill')
        assert done.returncode == 0, done.stderr

    def freeze(self):
        """SIGSTOP: it holds every call it got, answers none."""
        with open(os.path.join(self.dir, 'libvirtd', 'pid')) as f:
            os.kill(int(f.read()), signal.SIGSTOP)

    def stop(self):
        self._run('stop')


@pytest.fixture
def libvirtd():
    if shutil.which('libvirtd') is None or shutil.which('virsh') is None:
        pytest.skip('libvirtd is not installed (Debian: libvirt-daemon-system)')
    if os.geteuid() != 0:
        pytest.skip('starting a libvirtd as user libvirt-qemu needs root')
    directory = tempfile.mkdtemp(prefix='tristate-libvirtd-')
    daemon = PrivateLibvirtd(directory)
    done = daemon._run('start')
    if done.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.skip('the private libvirtd cannot run here: %s'
                    % done.stderr.strip())
    daemon.uri = done.stdout.strip()
    yield daemon
    daemon.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def conf(tmp_path):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    conf([], project='tristate', default_config_files=[])
    suffix = uuidlib.uuid4().hex[:12]       # the in-memory bus is global
    for group, values in (
            (None, {'state_dir': str(tmp_path)}),
            ('conductor', {'topic': 'conductor-lvr-%s' % suffix,
                           'rpc_timeout': 5, 'service_down_time': 10}),
            ('compute', {'topic': 'compute-lvr-%s' % suffix,
                         'heartbeat_interval': 0.2,
                         'power_sync_interval': 0.5,
                         'report_retry_max': 0.5, 'shutdown_timeout': 2})):
        for name, value in values.items():
            conf.set_override(name, value, group=group)
    yield conf
    conf.reset()


def wait_for(predicate, what, show=None, timeout=TIMEOUT):
    return functional.wait_for(predicate, what=what, show=show,
                               timeout=timeout)


def _clear(uri):
    """The daemon's test:///default starts with a domain of its own."""
    conn = libvirt.open(uri)
    try:
        for dom in conn.listAllDomains():
            if dom.isActive():
                dom.destroy()
            dom.undefine()
    finally:
        conn.close()


class Setup:
    """The plane, its agent on the private libvirtd, and what they saw."""

    def __init__(self, plane, drv, agent):
        self.plane, self.drv, self.agent = plane, drv, agent
        self.events = []
        drv.watch(self.events.append)
        self.ctx = context.RequestContext(user_id='alice', project_id='demo',
                                          roles=['member'])

    def build(self, name):
        return self.plane.client.create_instance(
            self.ctx, name=name, flavor='tiny', image_ref='cirros')['uuid']

    def instance(self, uuid):
        return self.plane.statedb.get_instance(uuid)

    def idle(self, uuid):
        def check():
            inst = self.instance(uuid)
            return inst if inst['task_id'] is None else None
        return wait_for(check, 'the task on %s to end' % uuid,
                        show=lambda: self.instance(uuid))

    def last_heartbeat(self):
        return [h for h in self.plane.statedb.list_hosts()
                if h['name'] == HOST][0]['last_heartbeat']


@pytest.fixture
def setup(libvirtd, conf, tmp_path):
    _clear(libvirtd.uri)
    images = tmp_path / 'images'
    images.mkdir()
    (images / 'cirros').write_bytes(b'cirros' * 100)
    drv = LibvirtDriver(uri=libvirtd.uri, virt_type='qemu',
                        images_path=str(images),
                        instances_path=str(tmp_path / 'instances'),
                        event_debounce=0.05, shutdown_timeout=2,
                        reconnect_interval_min=0.1,
                        reconnect_interval_max=0.5, reconnect_timeout=20)
    drv.init_host(HOST)
    plane = embedded.Embedded(conf, hosts=0, url=embedded.MEMORY_URL,
                              periodic_jobs=False).start()
    try:
        yield Setup(plane, drv, plane.start_agent(HOST, driver=drv))
    finally:
        plane.stop()
        drv.cleanup_host()


def test_the_agent_survives_a_libvirtd_restart(libvirtd, setup):
    first = setup.idle(setup.build('before'))
    assert (first['vm_state'], first['power_state']) == (vm.ACTIVE,
                                                         power.RUNNING)
    assert setup.drv.connection.opened == 1

    # A task that waits on libvirtd when it dies.
    libvirtd.freeze()
    across = setup.build('across')
    # The agent reports this step just before it calls the driver, whose
    # libvirt calls then wait on the frozen daemon.
    wait_for(lambda: setup.instance(across)['progress_step']
             == states.step.SPAWNING, 'the build to reach the driver')
    libvirtd.kill()
    libvirtd.start()

    # The agent reconnects by itself: no task is needed for it.
    wait_for(lambda: setup.drv.connection.opened >= 2,
             'the agent to reconnect')

    # The task that ran across the restart ended, and says how.
    inst = setup.idle(across)
    actions = [(a['action'], a['result'], a['message'])
               for a in setup.plane.statedb.list_actions(across)]
    if inst['vm_state'] == vm.ACTIVE:
        assert inst['power_state'] == power.RUNNING, inst
    else:
        assert inst['vm_state'] == vm.ERROR, inst
        assert 'libvirt' in (actions[-1][2] or ''), actions

    # Power reports and heartbeats keep coming.
    sent = setup.agent.reporter.full_reports_sent
    wait_for(lambda: setup.agent.reporter.full_reports_sent >= sent + 2,
             'two more full power reports')
    beat = setup.last_heartbeat()
    wait_for(lambda: setup.last_heartbeat() > beat,
             'a heartbeat after the restart')

    # A task after the restart works...
    after = setup.idle(setup.build('after'))
    assert (after['vm_state'], after['power_state']) == (vm.ACTIVE,
                                                         power.RUNNING)
    # ... and the new connection's lifecycle events arrive.
    outside = libvirt.open(libvirtd.uri)
    try:
        outside.lookupByUUIDString(after['uuid']).destroy()
    finally:
        outside.close()
    wait_for(lambda: any(e.uuid == after['uuid']
                         and e.power_state == power.SHUTDOWN
                         for e in setup.events),
             'the lifecycle event of the outside destroy',
             show=lambda: setup.events[-5:])
