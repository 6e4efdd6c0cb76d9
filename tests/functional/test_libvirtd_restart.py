"""libvirtd dies and comes back under a running agent.

The agent (libvirt driver, in the embedded plane) talks to a real libvirtd
over its UNIX socket: a private one, started by ``tools/test-services.sh
libvirtd DIR start`` for these tests alone (session mode, as user
libvirt-qemu), so that killing it disturbs nobody else's libvirt.

* On the daemon's test driver (``test+unix:///default``: no QEMU, but the
  real wire: RPC, keepalive, the close callback): while a build waits on
  the frozen daemon, it is killed and started again. The agent must
  reconnect by itself, that build must end (done, or failed saying the
  libvirt connection was lost), power reports and heartbeats must keep
  coming, a new build must work, and a domain destroyed behind the agent's
  back must be reported from its lifecycle event. (The test driver's
  domains live in the daemon's memory: gone after the restart.)
* On QEMU (``qemu+unix:///session``, TCG, a guest with no OS): a running
  guest outlives the restart; the agent keeps reporting it running, stops
  it, and sees the destroy made behind its back.

Skipped, with the reason, when the private libvirtd cannot run here.
"""

import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from common import context
from common import states
from common.states import power
from common.states import vm
from conductor import embedded
from tests.functional import conftest as functional

libvirt = pytest.importorskip('libvirt')

from compute_agent.virt.libvirt import LibvirtDriver  # noqa: E402
from compute_agent.virt.libvirt.disks import LocalImages  # noqa: E402

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
        with open(os.path.join(self.dir, 'lvd', 'pid')) as f:
            os.kill(int(f.read()), signal.SIGSTOP)

    def stop(self):
        self._run('stop')


@pytest.fixture
def libvirtd():
    if shutil.which('libvirtd') is None or shutil.which('virsh') is None:
        pytest.skip('libvirtd is not installed (Debian: libvirt-daemon-system)')
    if os.geteuid() != 0:
        pytest.skip('starting a libvirtd as user libvirt-qemu needs root')
    # Short (QEMU's socket paths under it must fit in 107 bytes; tox may
    # set TMPDIR to a long one), and readable by libvirt-qemu, who runs the
    # daemon and its guests.
    directory = tempfile.mkdtemp(prefix='lv-', dir='/tmp')
    os.chmod(directory, 0o755)
    daemon = PrivateLibvirtd(directory)
    done = daemon._run('start')
    if done.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.skip('the private libvirtd cannot run here: %s'
                    % done.stderr.strip())
    daemon.uri = done.stdout.strip()
    daemon.qemu_uri = daemon.uri.replace('test+unix:///default',
                                         'qemu+unix:///session')
    yield daemon
    daemon.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def conf(tmp_path):
    conf = functional.new_conf(tmp_path)
    functional.set_opts(conf, 'conductor', service_down_time=10)
    functional.set_opts(conf, 'compute', heartbeat_interval=0.2,
                        power_sync_interval=0.5, report_retry_max=0.5,
                        shutdown_timeout=2)
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
            self.ctx, name=name, flavor='tiny', image_ref='blank')['uuid']

    def act(self, uuid, action):
        self.plane.client.run_action(self.ctx, uuid, action, {})
        return self.idle(uuid)

    def saw(self, uuid, power_state):
        return any(e.uuid == uuid and e.power_state == power_state
                   for e in self.events)

    def actions(self, uuid):
        return [(a['action'], a['result'], a['message'])
                for a in self.plane.statedb.list_actions(uuid)]

    def instance(self, uuid):
        return self.plane.statedb.get_instance(uuid)

    def idle(self, uuid):
        def check():
            inst = self.instance(uuid)
            return inst if inst['task_id'] is None else None
        return wait_for(check, 'the task on %s to end' % uuid,
                        show=lambda: self.instance(uuid))

    def last_heartbeat(self):
        return next((h['last_heartbeat'] for h in
                     self.plane.statedb.list_hosts() if h['name'] == HOST),
                    None)


@pytest.fixture
def make_setup(libvirtd, conf):
    """``make_setup(uri)``: the plane and its agent on ``uri``, with an
    image ``blank`` (1 MiB of zeros). Its files are group kvm and group
    writable, so that QEMU (user libvirt-qemu, group kvm) can use the disks
    the agent makes (a session libvirtd does not chown them)."""
    made = []
    work = os.path.join(libvirtd.dir, 'w')
    old_umask = os.umask(0o002)

    def make(uri):
        os.makedirs(os.path.join(work, 'images'))
        for path in (work, os.path.join(work, 'images')):
            shutil.chown(path, group='kvm')
            os.chmod(path, 0o2775)
        with open(os.path.join(work, 'images', 'blank'), 'wb') as f:
            f.truncate(1024 * 1024)
        drv = LibvirtDriver(uri=uri, virt_type='qemu',
                            images=LocalImages(os.path.join(work, 'images')),
                            instances_path=os.path.join(work, 'instances'),
                            event_debounce=0.05, shutdown_timeout=1,
                            reconnect_interval_min=0.1,
                            reconnect_interval_max=0.5, reconnect_timeout=20)
        drv.init_host(HOST)
        plane = embedded.Embedded(conf, hosts=0, url=embedded.MEMORY_URL,
                                  periodic_jobs=False).start()
        made.append((plane, drv))
        setup = Setup(plane, drv, plane.start_agent(HOST, driver=drv))
        # The scheduler places builds on hosts that have sent a heartbeat.
        wait_for(setup.last_heartbeat, 'the first heartbeat of %s' % HOST)
        return setup

    try:
        yield make
    finally:
        for plane, drv in made:
            for info in drv.list_domains():      # no guest outlives us
                drv.destroy(info.uuid)
            plane.stop()
            drv.cleanup_host()
        os.umask(old_umask)


def test_the_agent_survives_a_libvirtd_restart(libvirtd, make_setup):
    _clear(libvirtd.uri)
    setup = make_setup(libvirtd.uri)
    first = setup.idle(setup.build('before'))
    assert (first['vm_state'], first['power_state']) == (
        vm.ACTIVE, power.RUNNING), setup.actions(first['uuid'])
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
    actions = setup.actions(across)
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
    wait_for(lambda: setup.saw(after['uuid'], power.SHUTDOWN),
             'the lifecycle event of the outside destroy',
             show=lambda: setup.events[-5:])


def test_a_guest_outlives_a_libvirtd_restart(libvirtd, make_setup):
    if shutil.which('qemu-system-x86_64') is None:
        pytest.skip('QEMU is not installed (Debian: qemu-system-x86)')
    setup = make_setup(libvirtd.qemu_uri)
    uuid = setup.build('guest')
    inst = setup.idle(uuid)
    assert (inst['vm_state'], inst['power_state']) == (vm.ACTIVE,
                                                       power.RUNNING), inst

    libvirtd.kill()           # QEMU keeps running; libvirtd finds it again
    libvirtd.start()
    wait_for(lambda: setup.drv.connection.opened >= 2,
             'the agent to reconnect')
    assert setup.drv.get_domain(uuid).power_state == power.RUNNING
    sent = setup.agent.reporter.full_reports_sent
    wait_for(lambda: setup.agent.reporter.full_reports_sent >= sent + 2,
             'two more full power reports')
    assert setup.instance(uuid)['power_state'] == power.RUNNING

    # Tasks on the guest that outlived the restart work.
    stopped = setup.act(uuid, 'stop')
    assert (stopped['vm_state'], stopped['power_state']) == (
        vm.STOPPED, power.SHUTDOWN), stopped
    started = setup.act(uuid, 'start')
    assert started['power_state'] == power.RUNNING, started
    # Events of the new connection: a destroy behind the agent's back.
    del setup.events[:]
    outside = libvirt.open(libvirtd.qemu_uri)
    try:
        outside.lookupByUUIDString(uuid).destroy()
    finally:
        outside.close()
    wait_for(lambda: setup.saw(uuid, power.SHUTDOWN),
             'the lifecycle event of the outside destroy',
             show=lambda: setup.events[-5:])
