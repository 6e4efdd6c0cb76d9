"""The lease flows and the event job over a real database, with the
instance flows and the notifier faked: the whole life of a lease, delete
from every status (also while an event runs), on_end, the scheduler's
lease filter, and updates checked against the lease's status."""

import pytest

from common import exception
from common.db import lease_hosts
from common.leases import event as ev
from common.leases import lease as ls
from common.leases import reservation as rs
from tests.unit.leases.conftest import FLAVOR_ARGS
from tests.unit.leases.conftest import HOUR
from tests.unit.leases.conftest import event_of
from tests.unit.leases.conftest import force
from tests.unit.leases.test_rules import ALL


def _body(clock, *, start_in=HOUR, hours=1, count=1, **extra):
    start = clock() + start_in
    return dict({'name': 'lease', 'start_date': start.isoformat(),
                 'end_date': (start + hours * HOUR).isoformat(),
                 'reservations': [{'resource_type': 'physical:host',
                                   'min': count, 'max': count}]}, **extra)


def _on_host(statedb, ctx, host, name='vm', reservation_id=None):
    """An instance placed on ``host`` (its build task still claimed), on
    ``reservation_id`` if given, as the scheduler places one."""
    inst = statedb.create_instance(ctx, dict(
        FLAVOR_ARGS, name=name, project_id=ctx.project_id,
        user_id=ctx.user_id, flavor_name='tiny', image_ref='cirros'))
    statedb.allocate(ctx.for_task(inst['task_id']), inst['uuid'], host,
                     vcpus=1, memory_mb=512, disk_gb=1)
    if reservation_id is not None:
        statedb.db.transaction(lease_hosts.record_instance, reservation_id,
                               inst['uuid'], statedb.clock())
    return inst['uuid']


def _claimed(statedb, ctx, name='vm'):
    inst = statedb.create_instance(ctx, dict(
        FLAVOR_ARGS, name=name, project_id=ctx.project_id,
        user_id=ctx.user_id, flavor_name='tiny', image_ref='cirros'))
    return ctx.for_task(inst['task_id']), inst['uuid']


# --- the life of a lease -----------------------------------------------------

def test_pending_active_terminated(lflows, runner, ctx, clock, lease_conf):
    lease_conf.set_override('before_end', 30, group='leases')
    lease = lflows.create(ctx, _body(clock))
    assert lease['status'] == ls.PENDING
    assert runner.run_due() == {}

    clock.advance(HOUR.total_seconds())
    assert runner.run_due() == {'done': 1}
    active = lflows.get(ctx, lease['id'])
    assert active['status'] == ls.ACTIVE
    assert active['reservations'][0]['status'] == rs.ACTIVE
    assert event_of(active, 'start_lease')['status'] == ev.DONE

    clock.advance(HOUR.total_seconds() / 2)
    assert runner.run_due() == {'done': 1}
    assert event_of(lflows.get(ctx, lease['id']),
                    'before_end_lease')['status'] == ev.DONE

    clock.advance(HOUR.total_seconds() / 2)
    assert runner.run_due() == {'done': 1}
    ended = lflows.get(ctx, lease['id'])
    assert ended['status'] == ls.TERMINATED
    assert ended['reservations'][0]['status'] == rs.DELETED
    assert [e['status'] for e in ended['events']] == [ev.DONE] * 3
    assert lflows.notifier.types() == [
        'lease.create', 'lease.start', 'lease.before_end', 'lease.end']
    assert runner.run_due() == {}


def test_start_now_and_a_late_end(lflows, runner, ctx, clock, lease_conf):
    lease_conf.set_override('before_end', 0, group='leases')
    lease = lflows.create(ctx, _body(clock, start_in=HOUR * 0,
                                     start_date='now'))
    assert lease['start_date'] == clock()
    assert [e['event_type'] for e in lease['events']] == ['start_lease',
                                                          'end_lease']
    clock.advance(2 * HOUR.total_seconds())
    # the end is listed only once the lease is ACTIVE: next pass
    assert runner.run_due() == {'done': 1}
    assert runner.run_due() == {'done': 1}
    assert lflows.get(ctx, lease['id'])['status'] == ls.TERMINATED


@pytest.mark.parametrize('on_end,call', [('delete', 'delete'),
                                         ('stop', 'stop')])
def test_on_end_handles_the_instances_that_used_the_reservation(
        lflows, runner, statedb, ctx, clock, on_end, call):
    lease = lflows.create(ctx, _body(clock, on_end=on_end))
    res = lease['reservations'][0]
    (host,) = res['hosts']
    before = _on_host(statedb, ctx, host, 'before')
    clock.advance(HOUR.total_seconds())
    runner.run_due()
    mine = _on_host(statedb, ctx, host, 'mine', res['id'])
    other = ctx.for_task(None)
    other.project_id = 'someone-else'
    theirs = _on_host(statedb, other, host, 'theirs')
    gone = _on_host(statedb, ctx, host, 'gone', res['id'])
    statedb.hard_delete(ctx, gone)
    statedb.finish_task(ctx.for_task(
        statedb.get_instance(mine)['task_id']), mine)

    clock.advance(HOUR.total_seconds())
    runner.run_due()
    assert lflows.get(ctx, lease['id'])['status'] == ls.TERMINATED
    assert lflows.flows.calls == [(call, mine)]
    assert {before, theirs, gone}.isdisjoint(
        uuid for _, uuid in lflows.flows.calls)


def test_a_run_that_keeps_failing_ends_in_error(lflows, runner, ctx, clock,
                                                lease_conf, monkeypatch):
    lease_conf.set_override('event_retries', 1, group='leases')
    lease = lflows.create(ctx, _body(clock))
    clock.advance(HOUR.total_seconds())

    def boom(lease_id, run_id):
        raise RuntimeError('no hosts today')
    monkeypatch.setattr(runner.db, 'activate', boom)
    assert runner.run_due() == {'retry': 1}
    assert lflows.get(ctx, lease['id'])['status'] == ls.STARTING
    assert runner.run_due() == {'error': 1}
    failed = lflows.get(ctx, lease['id'])
    assert failed['status'] == ls.ERROR
    assert 'no hosts today' in failed['status_reason']
    assert runner.run_due() == {}


# --- delete ------------------------------------------------------------------

@pytest.mark.parametrize('status', ALL)
def test_delete_from_every_status(lflows, make_lease, ldb, statedb, ctx,
                                  status):
    lease = make_lease()
    res = lease['reservations'][0]
    inst = _on_host(statedb, ctx, res['hosts'][0], reservation_id=res['id'])
    force(ldb, lease['id'], status)
    removed = lflows.delete(ctx, lease['id'])
    assert removed['status'] == ls.DELETING
    with pytest.raises(exception.LeaseNotFound):
        lflows.get(ctx, lease['id'])
    assert lflows.notifier.types() == ['lease.delete']
    held = removed['reservations'][0]['status'] == rs.ACTIVE
    assert lflows.flows.calls == ([('delete', inst)] if held else [])


def test_delete_wins_over_a_start_in_progress(lflows, runner, ctx, clock,
                                              monkeypatch):
    lease = lflows.create(ctx, _body(clock))
    clock.advance(HOUR.total_seconds())
    activate = runner.db.activate

    def deleted_meanwhile(lease_id, run_id):
        running = lflows.get(ctx, lease_id)
        assert event_of(running, 'start_lease')['status'] == ev.IN_PROGRESS
        lflows.delete(ctx, lease_id)
        return activate(lease_id, run_id)
    monkeypatch.setattr(runner.db, 'activate', deleted_meanwhile)
    assert runner.run_due() == {'preempted': 1}
    with pytest.raises(exception.LeaseNotFound):
        lflows.get(ctx, lease['id'])
    assert lflows.notifier.types() == ['lease.create', 'lease.delete']


def test_nothing_is_recorded_on_a_reservation_that_is_gone(statedb, ldb,
                                                          ctx, make_lease,
                                                          lflows):
    lease = make_lease()
    res = lease['reservations'][0]
    lflows.delete(ctx, lease['id'])
    inst = _on_host(statedb, ctx, res['hosts'][0], reservation_id=res['id'])
    assert ldb.reservation_instances(res) == []
    assert statedb.get_instance(inst)['host'] == res['hosts'][0]


def test_other_projects_do_not_see_a_lease(lflows, ctx, clock):
    lease = lflows.create(ctx, _body(clock))
    other = ctx.for_task(None)
    other.project_id = 'someone-else'
    with pytest.raises(exception.LeaseNotFound):
        lflows.get(other, lease['id'])
    with pytest.raises(exception.LeaseNotFound):
        lflows.delete(other, lease['id'])
    assert lflows.list(other) == []
    with pytest.raises(exception.Forbidden):
        lflows.list(other, all_projects=True)
    assert [x['id'] for x in lflows.list(ctx.elevated(),
                                         all_projects=True)] == [lease['id']]


# --- the scheduler's filter --------------------------------------------------

def _find(statedb, clock, reservation_id=None, project_id='demo'):
    hosts = statedb.find_hosts(
        vcpus=1, memory_mb=1, disk_gb=1, ratios=(1.0, 1.0, 1.0),
        alive_since=clock() - 100 * HOUR, reserved=lease_hosts.placement(
            reservation_id, project_id))
    return sorted(h['name'] for h in hosts)


def test_the_lease_filter(lflows, runner, statedb, ldb, ctx, clock):
    lease = lflows.create(ctx, _body(clock))
    res = lease['reservations'][0]
    assert _find(statedb, clock) == ['h1', 'h2', 'h3']      # not started
    assert _find(statedb, clock, res['id']) == []
    assert 'its lease %s is PENDING' % lease['id'] in (
        ldb.explain_placement(res['id'], 'demo'))

    clock.advance(HOUR.total_seconds())
    runner.run_due()
    assert _find(statedb, clock) == ['h2', 'h3']
    assert _find(statedb, clock, res['id']) == ['h1']
    assert _find(statedb, clock, res['id'], 'someone-else') == []
    assert ldb.explain_placement(res['id'], 'someone-else') == (
        'reservation %s does not exist' % res['id'])
    assert ldb.explain_placement(None, 'demo') == (
        '1 host(s) held by active leases')

    clock.advance(HOUR.total_seconds())
    runner.run_due()
    assert _find(statedb, clock) == ['h1', 'h2', 'h3']
    assert _find(statedb, clock, res['id']) == []


def test_a_host_held_since_it_was_chosen_is_not_allocated(
        lflows, runner, statedb, ldb, ctx, clock):
    """The lease filter is checked again by the allocation's own UPDATE:
    a lease that started between the scheduler's choice and the allocation
    keeps its host; a build naming the reservation is recorded as its
    instance in the same transaction."""
    lease = lflows.create(ctx, _body(clock))
    res = lease['reservations'][0]
    (held,) = res['hosts']
    task_ctx, uuid = _claimed(statedb, ctx)
    chosen = _find(statedb, clock)
    assert held in chosen                       # before the start
    clock.advance(HOUR.total_seconds())
    runner.run_due()                            # the lease starts now
    with pytest.raises(exception.HostCapacityExceeded):
        statedb.allocate(task_ctx, uuid, held, **FLAVOR_ARGS,
                         reserved=lease_hosts.placement(None, 'demo'))
    assert statedb.get_host(held)['used_vcpus'] == 0
    assert statedb.get_instance(uuid)['host'] is None

    mine_ctx, mine = _claimed(statedb, ctx, 'mine')
    statedb.allocate(mine_ctx, mine, held, **FLAVOR_ARGS,
                     reserved=lease_hosts.placement(res['id'], 'demo'),
                     reservation_id=res['id'])
    active = ldb.get_lease(lease['id'])['reservations'][0]
    assert [i['uuid'] for i in ldb.reservation_instances(active)] == [mine]


# --- update ------------------------------------------------------------------

def test_update_is_denied_while_starting(lflows, ldb, make_lease, ctx):
    lease = force(ldb, make_lease()['id'], ls.STARTING)
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        lflows.update(ctx, lease['id'], {'name': 'renamed'})
    assert err.value.code == 409
    assert 'its status is STARTING and update needs PENDING, ACTIVE, ' \
           'TERMINATED or ERROR' in err.value.message
    assert ldb.get_lease(lease['id']) == lease


def test_update_of_an_active_lease(lflows, runner, ctx, clock):
    lease = lflows.create(ctx, _body(clock))
    clock.advance(HOUR.total_seconds())
    runner.run_due()
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        lflows.update(ctx, lease['id'], {'start_date': 'now'})
    assert 'start_date cannot change once the lease has started' in (
        err.value.message)
    after = lflows.update(ctx, lease['id'], {'prolong_for': '2h',
                                             'name': 'longer'})
    assert (after['status'], after['name']) == (ls.ACTIVE, 'longer')
    assert after['end_date'] == lease['end_date'] + 2 * HOUR
    assert event_of(after, 'end_lease')['time'] == after['end_date']


def test_a_failed_update_leaves_the_lease_as_it_was(lflows, ldb, ctx, clock):
    lease = lflows.create(ctx, _body(clock))
    with pytest.raises(exception.Invalid) as err:
        lflows.update(ctx, lease['id'], {'end_date': lease['start_date']
                                         .isoformat()})
    assert 'field/attribute end_date' in err.value.message
    assert 'It must be after start_date' in err.value.message
    after = ldb.get_lease(lease['id'])
    assert (after['status'], after['end_date']) == (ls.PENDING,
                                                    lease['end_date'])
