"""Fixtures of the libvirt driver tests.

* ``make_node(*domains)``: writes a test-driver node file (16 vCPUs,
  16 GiB) holding the given ``<domain>`` XML strings; its path.
* ``images``: an images directory with the raw images ``cirros`` and
  ``rescue``.
* ``make_driver(**options)``: an initialised :class:`LibvirtDriver` on a
  fresh node file (or ``uri=``), 50 ms debounce, stopped after the test.
* ``Recorder``: a watch callback that keeps every report; ``wait(pred)``
  blocks on a condition with a deadline, never a fixed sleep.
"""

import threading
import uuid as uuidlib

import pytest

from common.flavors import Flavor

TINY = Flavor('tiny', 1, 512, 1)
SMALL = Flavor('small', 2, 1024, 2)
TEST_NS = 'http://libvirt.org/schemas/domain/test/1.0'
WAIT = 10.0        # generous: CI machines may be loaded

_NODE = """<node>
  <cpu><mhz>2000</mhz><model>x86_64</model><active>16</active><max>16</max>
  <nodes>1</nodes><sockets>1</sockets><cores>8</cores><threads>2</threads></cpu>
  <memory>16777216</memory>
%s
</node>
"""


def node_domain(uuid, *, runstate=None, virt_type='kvm', preserve=False):
    """A ``<domain>`` for a node file; ``runstate`` sets its libvirt state
    (e.g. 6: CRASHED, active) through the test driver's namespace."""
    actions = ('<on_poweroff>preserve</on_poweroff><on_crash>preserve'
               '</on_crash>' if preserve else '')
    state = ('<test:runstate>%d</test:runstate>' % runstate
             if runstate is not None else '')
    return ("<domain type='%s' xmlns:test='%s'><name>d-%s</name>"
            "<uuid>%s</uuid><memory>65536</memory><vcpu>1</vcpu>"
            "<os><type>hvm</type></os>%s%s</domain>"
            % (virt_type, TEST_NS, uuid, uuid, actions, state))


def new_uuid():
    return str(uuidlib.uuid4())


@pytest.fixture
def make_node(tmp_path):
    count = [0]

    def make(*domains):
        count[0] += 1
        path = tmp_path / ('node%d.xml' % count[0])
        path.write_text(_NODE % '\n'.join(domains))
        return 'test://%s' % path
    return make


@pytest.fixture
def images(tmp_path):
    path = tmp_path / 'images'
    path.mkdir()
    (path / 'cirros').write_bytes(b'cirros' * 100)
    (path / 'rescue').write_bytes(b'rescue' * 100)
    return path


@pytest.fixture
def make_driver(tmp_path, images, make_node):
    from compute_agent.virt.libvirt import LibvirtDriver
    from compute_agent.virt.libvirt.disks import LocalImages
    made = []

    def make(*, uri=None, host='h1', **options):
        options.setdefault('event_debounce', 0.05)
        options.setdefault('shutdown_timeout', 1)
        options.setdefault('reconnect_interval_min', 0.01)
        options.setdefault('reconnect_interval_max', 0.05)
        options.setdefault('reconnect_timeout', 2)
        drv = LibvirtDriver(uri=uri or make_node(), images=LocalImages(images),
                            instances_path=str(tmp_path / 'instances'),
                            **options)
        drv.init_host(host)
        made.append(drv)
        return drv

    yield make
    for drv in made:
        drv.cleanup_host()


class Recorder:
    """A watch callback keeping every DomainInfo it gets."""

    def __init__(self):
        self.infos = []
        self._cond = threading.Condition()

    def __call__(self, info):
        with self._cond:
            self.infos.append(info)
            self._cond.notify_all()

    def of(self, uuid):
        with self._cond:
            return [(i.power_state, i.reason) for i in self.infos
                    if i.uuid == uuid]

    def wait(self, predicate, *, what, timeout=WAIT):
        """Block until ``predicate(infos)`` holds; fail naming ``what``."""
        with self._cond:
            if self._cond.wait_for(lambda: predicate(list(self.infos)),
                                   timeout=timeout):
                return list(self.infos)
            pytest.fail('%s not reported within %.0f s; reports: %r'
                        % (what, timeout, self.infos), pytrace=False)

    def infos_of(self, uuid, since=0):
        """(power_state, reason) reported for ``uuid`` after ``since``."""
        with self._cond:
            return [(i.power_state, i.reason) for i in self.infos[since:]
                    if i.uuid == uuid]

    def mark(self):
        """A position: ``wait_for(..., since=mark)`` looks only after it."""
        with self._cond:
            return len(self.infos)

    def wait_for(self, uuid, power_state, reason=None, *, since=0,
                 timeout=WAIT):
        """Wait for a report of ``uuid`` in (power_state, reason)."""
        want = (uuid, power_state, reason)
        self.wait(lambda infos: any((i.uuid, i.power_state, i.reason) == want
                                    for i in infos[since:]),
                  what='%s in %r' % (uuid, want[1:]), timeout=timeout)


@pytest.fixture
def recorder():
    return Recorder()
