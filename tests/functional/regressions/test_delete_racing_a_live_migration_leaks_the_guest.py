"""A delete (or an admin reset-state) racing a live migration leaked a
running guest on the destination.

Found by trying the embedded plane as an adversarial client would (issue
19, item 1): an admin's ``os-migrateLive`` and the owner's DELETE a few
milliseconds later left, about one time in four, the instance
``hard_deleted`` (placed on the source) while its domain ran on the
destination forever: the destination's reports named an instance placed
elsewhere, which counted as an orphan, and the default ``orphan_action =
log`` only logged it. An admin ``os-resetState`` during the migration did
the same, and left the migration's allocation on the destination too.

Fixed: a domain whose instance is hard-deleted is destroyed by whichever
agent reports it, whatever ``orphan_action`` says; a reset that preempts a
move frees the destination's allocation and dooms its copy in the same
transaction (``stray_domains``), the destination is told at once, and its
reports destroy the copy if it arrives later. Here the race is made
certain: the migration's result is held on the source until the delete or
reset was made, after the domain moved.

A delete first left the destination's copy to the destination's next power
report (its arrival event, or the periodic sync up to
``power_sync_interval`` later): the guest ran on, unpaid for, until then,
and forever if the report never came. Found when reviewing the fix above.
Fixed: the hard delete's transaction returns the hosts other than the
instance's own where it held an allocation, and both delete paths ask each
of them to destroy its copy at once (the API tier's cast names them since
conductor RPC 1.6). The last test holds every power report of the
destination and sees the copy destroyed all the same.
"""

import threading

import pytest

from common import rpc
from common.db import checks
from common.states import power
from common.states import task
from common.states import vm
from conductor import rpcapi as conductor_rpcapi
from tests.functional.conftest import active
from tests.functional.conftest import allocated
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.functional.conftest import TIMEOUT
from tests.functional.conftest import used
from tests.functional.conftest import wait_agent_done
from tests.functional.conftest import wait_domain
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_instance

NOTHING = (0, 0, 0)


def _moved(make_plane, ctx, admin, monkeypatch, *, hold_dest=False):
    """A plane and an instance whose domain a live migration has moved to
    the destination, the migration's result held back on the source (where
    the race put it): returns (plane, uuid, source, destination, release);
    ``release()`` lets the result go. With ``hold_dest``, no power report
    of the destination reaches the conductor from before the move on."""
    plane = make_plane()
    inst = active(plane, ctx)
    uuid, source = inst['uuid'], inst['host']
    [dest] = [h for h in plane.host_names if h != source]
    if hold_dest:
        _hold_reports(plane, dest, monkeypatch)
    gate = threading.Event()
    client = plane.agents[source].manager.conductor
    finished = client.task_finished

    def held(*args, **kwargs):
        gate.wait(TIMEOUT)
        return finished(*args, **kwargs)
    monkeypatch.setattr(client, 'task_finished', held, raising=False)
    plane.client.run_action(admin, uuid, 'live_migrate')
    wait_domain(plane, dest, uuid, lambda rec: rec is not None,
                what='the migration to move the domain')
    assert plane.statedb.get_instance(uuid)['task_state'] == task.MIGRATING
    return plane, uuid, source, dest, gate.set


def _hold_reports(plane, host, monkeypatch):
    """``host``'s power reports, on their own or riding on a heartbeat, are
    refused from now on as if the bus had lost them (the agent keeps them
    for its next try); its bare heartbeats pass."""
    client = plane.agents[host].manager.conductor
    heartbeat = client.heartbeat

    def lost(*args, **kwargs):
        raise rpc.MessagingTimeout('held by the test')

    def beat(*args, power=None, **kwargs):
        if power is not None:
            lost()
        return heartbeat(*args, **kwargs)
    monkeypatch.setattr(client, 'power_report', lost, raising=False)
    monkeypatch.setattr(client, 'heartbeat', beat, raising=False)


def _clean(plane):
    """``check``'s violations once the destination reported its copy gone
    (a stray's record lasts until then)."""
    wait_for(lambda: [s for s in plane.statedb.list_strays()
                      if s['power_state']] == [],
             what='the destination to report the copy gone',
             show=plane.statedb.list_strays)
    found, _seen = checks.find_violations(plane.statedb.db, checks.Limits())
    return [str(v) for v in found]


def test_a_delete_during_a_live_migration_leaves_no_guest_anywhere(
        make_plane, ctx, admin, monkeypatch):
    plane, uuid, source, dest, release = _moved(make_plane, ctx, admin,
                                                monkeypatch)

    plane.client.delete_instance(ctx, uuid)
    release()
    wait_agent_done(plane, source)

    wait_domain(plane, dest, uuid, lambda rec: rec is None,
                what='the deleted instance\'s guest to be destroyed on the '
                     'destination')
    assert domain(plane, source, uuid) is None
    for host in plane.host_names:
        assert used(plane, host) == allocated(plane, host) == NOTHING
    assert plane.statedb.get_instance(uuid)['vm_state'] == vm.HARD_DELETED
    assert _clean(plane) == []


def test_a_reset_state_during_a_live_migration_leaves_no_guest_behind(
        make_plane, ctx, admin, monkeypatch):
    plane, uuid, source, dest, release = _moved(make_plane, ctx, admin,
                                                monkeypatch)
    flavor = used(plane, source)

    after = plane.client.reset_state(admin, uuid, vm.ACTIVE)
    assert (after['vm_state'], after['task_id']) == (vm.ACTIVE, None)
    assert 'doomed_hosts' not in after
    # the destination's allocation ends with the move, at once
    assert used(plane, dest) == allocated(plane, dest) == NOTHING
    release()
    wait_agent_done(plane, source)

    wait_domain(plane, dest, uuid, lambda rec: rec is None,
                what='the preempted move\'s copy to be destroyed on the '
                     'destination')
    # The guest went with the move the admin cut short: the instance,
    # still placed on the source, is told so by reconcile.
    inst = wait_instance(plane, uuid, lambda i: i['vm_state'] == vm.ERROR,
                         what='reconcile to see the domain gone')
    assert (inst['host'], inst['power_state']) == (source, power.NOSTATE)
    assert used(plane, source) == allocated(plane, source) == flavor
    assert used(plane, dest) == allocated(plane, dest) == NOTHING
    assert _clean(plane) == []


def _delete_with_database_access(plane, conf, ctx, uuid):
    """The API tier's delete: the UPDATE there, then a cast."""
    return plane.client.delete_instance(ctx, uuid)


def _delete_by_a_conductor(plane, conf, ctx, uuid):
    """A client without database access: a conductor deletes."""
    return conductor_rpcapi.ConductorAPI(plane.bus, conf).delete_instance(
        ctx, uuid)


@pytest.mark.parametrize('delete', [_delete_with_database_access,
                                    _delete_by_a_conductor])
def test_the_destination_is_told_at_once_not_at_its_next_report(
        conf, make_plane, ctx, admin, monkeypatch, delete):
    # no periodic report within the test, and none of the destination's
    # reports (the domain's arrival event included) delivered: only the
    # delete's own request can destroy the copy
    set_opts(conf, 'compute', power_sync_interval=3600)
    plane, uuid, source, dest, release = _moved(make_plane, ctx, admin,
                                                monkeypatch, hold_dest=True)

    after = delete(plane, conf, ctx, uuid)
    assert after['vm_state'] == vm.HARD_DELETED
    assert 'doomed_hosts' not in after

    wait_domain(plane, dest, uuid, lambda rec: rec is None,
                what='the delete to have the destination destroy its copy')
    assert plane.statedb.list_strays(host=dest) == []
    release()
    wait_agent_done(plane, source)
    assert domain(plane, source, uuid) is None
    for host in plane.host_names:
        assert used(plane, host) == allocated(plane, host) == NOTHING
    monkeypatch.undo()
    assert _clean(plane) == []
