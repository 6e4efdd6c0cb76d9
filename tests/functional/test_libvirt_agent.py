"""The compute agent on the libvirt driver inside the whole control plane.

One conductor (SQLite, the in-memory bus) and one agent, ``lv1``, whose
driver is a :class:`LibvirtDriver` on libvirt's test driver (``test:///``
with a node file in ``tmp_path``: no daemon, domains private to the test).
A build, a stop, and a guest that shuts itself down behind the plane's back
(``shutdown()`` on the driver's own connection): reported at once from the
lifecycle event with reason ``guest``, no user task involved.

Xen: the test driver does not honour ``preserve`` (a stopped domain never
stays active), so the preserve/cleanup path is tested at the driver level
(tests/unit/compute_agent/libvirt/test_xen.py); here the Xen flavour of the
XML builds, runs and reports a guest shutdown end to end.
"""

import os
import time
import uuid as uuidlib

import pytest
from oslo_config import cfg

from common import conf as tconf
from common import context
from common import rpc
from common.states import power
from common.states import vm

try:
    import libvirt
except ImportError as err:
    _REASON = ('libvirt-python cannot be imported (%s): apt-get install -y '
               'libvirt-dev pkg-config, then pip install libvirt-python'
               % err)
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs libvirt-python: ' + _REASON, pytrace=False)
    pytest.skip(_REASON, allow_module_level=True)

from compute_agent.virt.libvirt import LibvirtDriver  # noqa: E402
from compute_agent.virt.libvirt import config  # noqa: E402
from conductor import embedded  # noqa: E402

HOST = 'lv1'
TIMEOUT = 15.0
NODE = """<node>
  <cpu><mhz>2000</mhz><model>x86_64</model><active>16</active><max>16</max>
  <nodes>1</nodes><sockets>1</sockets><cores>8</cores><threads>2</threads></cpu>
  <memory>16777216</memory>
</node>
"""


def wait_for(predicate, *, what, show=None, timeout=TIMEOUT):
    """Poll ``predicate`` until it returns something true; return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail('%s did not happen within %.0f s; last seen: %r'
                        % (what, timeout, show() if show else value),
                        pytrace=False)
        time.sleep(0.01)


@pytest.fixture
def conf(tmp_path):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    conf([], project='tristate', default_config_files=[])
    suffix = uuidlib.uuid4().hex[:12]       # the in-memory bus is global
    for group, values in (
            (None, {'state_dir': str(tmp_path)}),
            ('conductor', {'topic': 'conductor-lv-%s' % suffix,
                           'rpc_timeout': 5, 'service_down_time': 5}),
            ('compute', {'topic': 'compute-lv-%s' % suffix,
                         'heartbeat_interval': 0.1,
                         # Only events can report in time: no full
                         # report during a test.
                         'power_sync_interval': 600,
                         'report_retry_max': 0.5, 'shutdown_timeout': 2})):
        for name, value in values.items():
            conf.set_override(name, value, group=group)
    yield conf
    conf.reset()


@pytest.fixture
def start_plane(conf, tmp_path):
    """``start_plane(virt_type)``: the plane with agent lv1 on libvirt."""
    planes = []
    images = tmp_path / 'images'
    images.mkdir()
    (images / 'cirros').write_bytes(b'cirros' * 100)
    node = tmp_path / 'node.xml'
    node.write_text(NODE)

    def start(virt_type='kvm'):
        drv = LibvirtDriver(uri='test://%s' % node, virt_type=virt_type,
                            images_path=str(images),
                            instances_path=str(tmp_path / 'instances'),
                            event_debounce=0.05, shutdown_timeout=2)
        drv.init_host(HOST)
        plane = embedded.Embedded(conf, hosts=0, url='kombu+memory:////',
                                  periodic_jobs=False).start()
        planes.append(plane)
        plane.start_agent(HOST, driver=drv)
        wait_for(lambda: any(h['name'] == HOST and h['last_heartbeat']
                             for h in plane.statedb.list_hosts()),
                 what='the first heartbeat of %s' % HOST)
        return plane, drv

    yield start
    for plane in planes:
        plane.stop()


@pytest.fixture
def ctx():
    return context.RequestContext(user_id='alice', project_id='demo',
                                  roles=['member'])


def summary(inst):
    return {key: inst.get(key) for key in (
        'vm_state', 'task_state', 'power_state', 'power_reason', 'host')}


def wait_instance(plane, uuid, predicate, what):
    def check():
        inst = plane.statedb.get_instance(uuid)
        return inst if predicate(inst) else None
    return wait_for(check, what='%s (instance %s)' % (what, uuid),
                    show=lambda: summary(plane.statedb.get_instance(uuid)))


def idle(plane, uuid):
    return wait_instance(plane, uuid, lambda i: i['task_id'] is None,
                         'its task to end')


def build(plane, ctx):
    inst = plane.client.create_instance(ctx, name='vm', flavor='tiny',
                                        image_ref='cirros')
    inst = idle(plane, inst['uuid'])
    assert (inst['vm_state'], inst['power_state'], inst['host']) == (
        vm.ACTIVE, power.RUNNING, HOST), summary(inst)
    return inst


def actions_of(plane, uuid):
    return [entry['action'] for entry in plane.statedb.list_actions(uuid)]


def test_build_then_stop_then_start(start_plane, ctx):
    plane, drv = start_plane()
    inst = build(plane, ctx)
    uuid = inst['uuid']
    assert inst['power_reason'] is None
    dom = drv.connection.get().lookupByUUIDString(uuid)
    assert dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
    assert config.instance_of(dom.XMLDesc(0))[2] == 'cirros'

    plane.client.run_action(ctx, uuid, 'stop', {})
    inst = idle(plane, uuid)
    assert (inst['vm_state'], inst['power_state'], inst['power_reason']) == (
        vm.STOPPED, power.SHUTDOWN, None), summary(inst)   # asked: no reason
    assert not dom.isActive()

    plane.client.run_action(ctx, uuid, 'start', {})
    inst = idle(plane, uuid)
    assert (inst['vm_state'], inst['power_state']) == (vm.ACTIVE,
                                                       power.RUNNING)
    assert actions_of(plane, uuid) == ['build', 'stop', 'start']


@pytest.mark.parametrize('virt_type', ['kvm', 'xen'])
def test_a_guest_shutdown_is_reported_with_reason_guest(start_plane, ctx,
                                                         virt_type):
    plane, drv = start_plane(virt_type)
    uuid = build(plane, ctx)['uuid']
    dom = drv.connection.get().lookupByUUIDString(uuid)
    assert config.preserves(dom.XMLDesc(0)) == (virt_type == 'xen')

    dom.shutdown()                              # behind the plane's back

    inst = wait_instance(plane, uuid, lambda i: i['power_state']
                         == power.SHUTDOWN, 'the guest shutdown reported')
    assert inst['power_reason'] == 'guest', summary(inst)
    # No user task: the conductor's reconcile follows the guest (the
    # default user_shutdown policy "stop") and says so in the action log.
    inst = wait_instance(plane, uuid, lambda i: i['vm_state'] == vm.STOPPED
                         and i['task_id'] is None, 'reconcile to STOPPED')
    assert (inst['power_state'], inst['power_reason']) == (power.SHUTDOWN,
                                                           'guest')
    assert 'stop' not in actions_of(plane, uuid)
    assert drv.cleanup_preserved() == []       # nothing preserved is active
