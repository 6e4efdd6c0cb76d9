"""A build that failed without rollback left a domain its host did not
count, and an admin reset to active then ran it uncounted.

Found trying the embedded plane as an adversarial client would (issue 19,
item 2a): a build that fails half-way leaves its domain (here CRASHED)
while the failure freed the instance's allocation; ``os-resetState
active`` then let reconcile restart it: an ACTIVE, RUNNING instance that
its host's usage did not include, so the scheduler could over-commit the
host. Nothing refused the reset either when the host had no room left.

Fixed (whatever runs on a host is counted on that host): a build that
ends in ERROR keeps its allocation unless its result says the domain is
gone; a reset to active takes the instance's allocation on its host in the
same transaction when it holds none, or is refused with a 409 naming the
host when the host has no room.
"""

import pytest

from common import exception
from common import states
from common.db import checks
from common.states import power
from common.states import vm
from tests.functional.conftest import active
from tests.functional.conftest import allocated
from tests.functional.conftest import build
from tests.functional.conftest import domain
from tests.functional.conftest import faults
from tests.functional.conftest import set_opts
from tests.functional.conftest import used
from tests.functional.conftest import wait_heartbeat
from tests.functional.conftest import wait_hung
from tests.functional.conftest import wait_instance

TINY = (1, 512, 1)
BUILD_TIMEOUT = 1800


def test_a_failed_build_keeps_its_allocation_while_its_domain_is_there(
        make_plane, ctx, admin):
    plane = make_plane(hosts=1)
    faults(plane, 'host1').set_fault('spawn', 'fail_no_rollback', count=1)
    inst = build(plane, ctx)
    uuid = inst['uuid']
    assert inst['vm_state'] == vm.ERROR
    assert domain(plane, 'host1', uuid)['power_state'] == power.CRASHED
    assert used(plane, 'host1') == allocated(plane, 'host1') == TINY

    plane.client.reset_state(admin, uuid, vm.ACTIVE)

    # reconcile restarts the crashed guest (crash policy restart): counted
    wait_instance(plane, uuid, lambda i: (i['power_state'], i['task_id']) == (
        power.RUNNING, None), what='reconcile to restart the guest')
    assert used(plane, 'host1') == allocated(plane, 'host1') == TINY
    found, _seen = checks.find_violations(plane.statedb.db, checks.Limits())
    assert found == []


def test_a_reset_to_active_is_counted_or_refused_with_409(
        conf, make_plane, ctx, admin, clock):
    set_opts(conf, 'fake_driver', memory_mb=1024)     # room for two tiny
    plane = make_plane(hosts=1, clock=clock)
    # A build whose agent went silent before spawning: ERROR, freed.
    faults(plane, 'host1').set_fault('spawn', 'hang', count=1)
    lost = plane.client.create_instance(ctx, name='lost', flavor='tiny',
                                        image_ref='cirros')['uuid']
    wait_instance(plane, lost,
                  lambda i: i['progress_step'] == states.step.SPAWNING,
                  what='spawning')
    # SPAWNING is reported before the driver is called: cleared before the
    # spawn met it, the fault would never fire and the domain would be made
    wait_hung(plane, 'host1', 'spawn')
    clock.advance(BUILD_TIMEOUT + 1)
    assert plane.conductor.periodic.run_once()['reaped'] == 1
    faults(plane, 'host1').clear_faults()
    wait_heartbeat(plane, 'host1', since=clock.now)
    assert used(plane, 'host1') == (0, 0, 0)
    active(plane, ctx, name='one')
    other = active(plane, ctx, name='two')['uuid']

    with pytest.raises(exception.Conflict) as err:
        plane.client.reset_state(admin, lost, vm.ACTIVE)
    assert err.value.code == 409
    assert 'its host host1' in err.value.message
    assert 'no room' in err.value.message
    assert plane.statedb.get_instance(lost)['vm_state'] == vm.ERROR
    assert used(plane, 'host1') == allocated(plane, 'host1') == (2, 1024, 2)

    plane.client.delete_instance(ctx, other)
    after = plane.client.reset_state(admin, lost, vm.ACTIVE)
    assert after['vm_state'] == vm.ACTIVE
    assert [a['host'] for a in plane.statedb.list_allocations(
        instance_uuid=lost)] == ['host1']
    assert used(plane, 'host1') == allocated(plane, 'host1') == (2, 1024, 2)
