"""The rebuild of a buried (PENDING) server ignored the image it named.

Seed 004's PENDING -> BUILD is asked for with a rebuild, which, as any
rebuild, may name a new image. The conductor sent it in the task, but the
agent, finding no domain, built the guest from the instance's old
``image_ref``, and the conductor kept that old ``image_ref`` as well: the
request was answered 202, the image it named was never used (a field
accepted and not acted on: issue 22). Found while building unshelve (issue
22), which builds an offloaded server from its snapshot through the same
agent path. Fixed: a build from a task naming ``image_ref`` builds from
that image (compute_agent/tasks.py) and the rebuild's finish stores it
(conductor/results.py).
"""

from common.states import vm
from tests import images_support
from tests.functional.conftest import act
from tests.functional.conftest import build
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_heartbeat

DEBIAN = images_support.IMAGES['debian-12']


def test_a_buried_server_is_built_from_the_image_its_rebuild_names(
        conf, make_plane, ctx):
    conf.set_override('use_pending_state', True)
    set_opts(conf, 'fake_driver', memory_mb=512)        # no room for small
    plane = make_plane(hosts=1)
    inst = build(plane, ctx, flavor='small')
    assert inst['vm_state'] == vm.PENDING

    set_opts(conf, 'fake_driver', memory_mb=65536)
    plane.start_agent('host2')
    wait_heartbeat(plane, 'host2')
    built = act(plane, ctx, inst['uuid'], 'rebuild', image_ref=DEBIAN)

    assert (built['vm_state'], built['host']) == (vm.ACTIVE, 'host2')
    assert domain(plane, 'host2', inst['uuid'])['image_ref'] == DEBIAN
    assert built['image_ref'] == DEBIAN
