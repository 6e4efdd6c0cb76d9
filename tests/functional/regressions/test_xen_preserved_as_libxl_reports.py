"""Xen's preserved domains were tested only in states libxl never gives.

With ``on_poweroff``/``on_crash`` ``preserve``, libvirt's libxl driver
marks a guest that powered off or crashed SHUTOFF with reason SHUTDOWN or
CRASHED (``libxlDomainShutdownThread``) and does nothing else: the domain
stays defined *and active* (libxl still holds it, with its memory) until
someone destroys it. The tests stood in for that with libvirt's power
states 4 (SHUTDOWN) and 6 (CRASHED), which libxl never reports for a
preserved guest. Found reviewing the Xen flavour against libvirt's libxl
driver (issue 19, item 9).

libvirt's test driver cannot hold such a domain (a node file's SHUTOFF
runstate is inactive, and its reason is always 0), so
``tests/unit/compute_agent/libvirt/libxl.py`` wraps the test driver's
connection: a domain the test "preserves" reads as libxl
gives it (active; SHUTOFF, SHUTDOWN or CRASHED) until it is destroyed.
Then the Xen path runs as it must on libxl: reported with reason ``guest``
or ``crashed`` (the crash policy applies to the latter), destroyed by the
cleanup only once reported, left defined, still reported for why it
stopped after the cleanup, and started again by a start. What failed:
rebuild, resize, rescue/unrescue and snapshot took a preserved domain
(active) for a running one and booted it; they now ask whether the guest
runs (``LibvirtDriver._up``), not whether the domain is active.
"""

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.states import power  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import images  # noqa: E402,F401
from tests.unit.compute_agent.libvirt.conftest import make_driver  # noqa: E402,F401
from tests.unit.compute_agent.libvirt.conftest import make_node  # noqa: E402,F401
from tests.unit.compute_agent.libvirt import libxl as libxl_emulation  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402


@pytest.fixture
def libxl(monkeypatch):
    return libxl_emulation.emulate(monkeypatch)


@pytest.fixture
def xen(libxl, make_driver):  # noqa: F811 (the fixture imported above)
    return make_driver(virt_type='xen')


def _spawn(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    return uuid


def _raw(drv, uuid):
    return drv.connection.get()._conn.lookupByUUIDString(uuid)


@pytest.mark.parametrize('why', ['guest', 'crashed'])
def test_a_preserved_domain_is_reported_then_cleaned_up(libxl, xen, why):
    uuid, bystander = _spawn(xen), _spawn(xen)
    libxl.preserve(uuid, why)

    assert xen.cleanup_preserved() == []        # not reported yet: kept
    assert _raw(xen, uuid).isActive()
    reported = {i.uuid: (i.power_state, i.reason) for i in xen.list_domains()}
    assert reported[uuid] == (power.SHUTDOWN, why)
    assert reported[bystander][0] == power.RUNNING

    assert xen.cleanup_preserved() == [uuid]

    dom = _raw(xen, uuid)
    assert not dom.isActive() and dom.isPersistent()     # left defined
    after = xen.get_domain(uuid)
    assert (after.power_state, after.reason) == (power.SHUTDOWN, why)
    assert _raw(xen, bystander).isActive()
    assert xen.cleanup_preserved() == []


def test_query_calls_never_clean_up(libxl, xen):
    uuid = _spawn(xen)
    libxl.preserve(uuid, 'crashed')
    for _ in range(2):
        xen.list_domains()
        xen.get_domain(uuid)
        xen.get_capacity()
    assert _raw(xen, uuid).isActive()


def test_a_start_cleans_up_and_boots_the_preserved_domain(libxl, xen):
    uuid = _spawn(xen)
    libxl.preserve(uuid, 'guest')
    xen.get_domain(uuid)                        # reported

    xen.power_on(uuid)

    assert xen.get_domain(uuid).power_state == power.RUNNING


@pytest.mark.parametrize('operation', ['power_off', 'destroy'])
def test_stop_and_delete_of_a_preserved_domain(libxl, xen, operation):
    uuid = _spawn(xen)
    libxl.preserve(uuid, 'crashed')
    getattr(xen, operation)(uuid)
    if operation == 'destroy':
        assert xen.get_domain(uuid) is None
    else:
        assert not _raw(xen, uuid).isActive()
        assert xen.get_domain(uuid).power_state == power.SHUTDOWN


@pytest.mark.parametrize('operation', ['rebuild', 'resize', 'rescue',
                                       'snapshot'])
def test_an_operation_leaves_a_preserved_domain_off(libxl, xen, operation,
                                                    tmp_path):
    """A guest that powered itself off stays off through an operation that
    keeps the power state, even before its state was reported (so the
    cleanup kept it): libxl's domain is active, but not running."""
    uuid = _spawn(xen)
    libxl.preserve(uuid, 'guest')
    kwargs = {'rebuild': {'image_ref': 'cirros'}, 'resize': {'flavor': TINY},
              'rescue': {'image_ref': 'rescue'},
              'snapshot': {'image_name': 'snap-%s' % uuid,
                           'target': str(tmp_path / 'snap')}}[operation]

    getattr(xen, operation)(uuid, **kwargs)
    if operation == 'rescue':       # the rescue domain runs; then back off
        assert xen.get_domain(uuid).power_state == power.RUNNING
        xen.unrescue(uuid)

    assert xen.get_domain(uuid).power_state == power.SHUTDOWN
