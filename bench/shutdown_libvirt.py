"""The guest-shutdown scenario on libvirt's test driver, with events.

Target: median < debounce + 100 ms (``[libvirt] event_debounce``, by
default 0.05 s with virt_type kvm, as here, and 0.5 s with xen). One
agent on :class:`LibvirtDriver` with ``test://NODE.xml``
(no daemon; domains private to this process); ``dom.shutdown()`` on the
driver's own connection is the guest powering off; the clock stops when
the row says STOPPED with no task.
"""

import os
import time

from bench import core
from bench import plane as plane_mod

NAME = 'shutdown_libvirt'
TINY = ['--instances', '2']
HOST = 'lv1'
NODE = """<node>
  <cpu><mhz>2000</mhz><model>x86_64</model><active>64</active><max>64</max>
  <nodes>1</nodes><sockets>1</sockets><cores>32</cores><threads>2</threads></cpu>
  <memory>268435456</memory>
</node>
"""


def add_arguments(parser):
    parser.add_argument('--instances', type=int, default=50)
    parser.add_argument('--debounce', type=float, default=None,
                        help='[libvirt] event_debounce in seconds (default: '
                             'the option\'s default)')


def _start_agent(plane, debounce):
    from compute_agent.virt.libvirt import LibvirtDriver
    images = os.path.join(plane.tmp, 'images')
    os.makedirs(images)
    with open(os.path.join(images, plane_mod.IMAGE), 'wb') as f:
        f.write(b'cirros' * 100)
    node = os.path.join(plane.tmp, 'node.xml')
    with open(node, 'w') as f:
        f.write(NODE)
    drv = LibvirtDriver(uri='test://%s' % node, virt_type='kvm',
                        images_path=images,
                        instances_path=os.path.join(plane.tmp, 'instances'),
                        event_debounce=debounce, shutdown_timeout=2)
    drv.init_host(HOST)
    plane.embedded.start_agent(HOST, driver=drv)
    core.wait_for(lambda: any(h['name'] == HOST and h['last_heartbeat']
                              for h in plane.statedb.list_hosts()),
                  timeout=30, what='a heartbeat of %s' % HOST)
    return drv


def run(args):
    import libvirt
    libvirt.registerErrorHandler(lambda *a: None, None)
    times = []
    with plane_mod.Plane(hosts=0, api=False) as plane:
        debounce = (plane.conf.libvirt.event_debounce if args.debounce is None
                    else args.debounce)
        drv = _start_agent(plane, debounce)
        debounce = drv.event_debounce       # the default, when unset
        uuids = plane.build_direct(args.instances)
        conn = drv.connection.get()
        for uuid in uuids:
            dom = conn.lookupByUUIDString(uuid)
            started = time.monotonic()
            dom.shutdown()
            plane.wait_vm_state(uuid, 'stopped', timeout=30)
            times.append(time.monotonic() - started)
    size = '%d guest shutdowns, event_debounce %.2f s' % (len(times), debounce)
    return [
        core.Figure(NAME, 'guest shutdown -> STOPPED, median',
                    core.median(times) * 1e3, 'ms', '<',
                    (debounce + 0.1) * 1e3, size=size),
        core.Figure(NAME, 'guest shutdown -> STOPPED, p99',
                    core.percentile(times, 99) * 1e3, 'ms', size=size),
    ]
