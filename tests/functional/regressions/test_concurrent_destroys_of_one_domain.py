"""Two destroys of one domain at once: the one that loses the race fails.

Deleting a server casts ``destroy_domain`` to its agent, and the agent's
reporter, seeing a domain whose instance is deleted, destroys it too (a
leftover). On real QEMU (found by tests/functional/
test_images_on_real_qemu.py, issue 21) both ran at once: the libvirt
driver looked the domain up, the other destroy undefined it, and the next
libvirt call (``isActive``, ``destroy`` or ``undefine``) failed with
VIR_ERR_NO_DOMAIN, so the delete's RPC raised "destroy of domain ...
failed: Domain not found" and the reporter logged an error, though the
domain was gone as both wanted. Fixed: the driver's destroy takes a
domain that vanishes under it as destroyed (it removes the instance's
files still), as it already did for a domain missing at the lookup.
"""

import uuid as uuidlib

import pytest

from common.flavors import Flavor

libvirt = pytest.importorskip('libvirt')

from tests.functional.regressions import libvirt_support  # noqa: E402



@pytest.fixture
def drv(tmp_path):
    with libvirt_support.started_driver(tmp_path, 'h1') as drv:
        yield drv


def test_a_domain_destroyed_meanwhile_is_destroyed(drv, tmp_path):
    uuid = str(uuidlib.uuid4())
    drv.spawn(uuid, name='vm', flavor=Flavor('t', 1, 64, 1), image_ref='img')
    assert (tmp_path / 'instances' / uuid / 'disk').exists()
    real_lookup = drv._lookup

    def lookup_then_lose_the_race(conn, wanted):
        dom = real_lookup(conn, wanted)
        other = conn.lookupByUUIDString(wanted)     # the other destroy
        other.destroy()
        other.undefine()
        return dom
    drv._lookup = lookup_then_lose_the_race

    drv.destroy(uuid)          # raised VirtError "Domain not found"

    drv._lookup = real_lookup
    assert drv.get_domain(uuid) is None
    assert not (tmp_path / 'instances' / uuid).exists()
