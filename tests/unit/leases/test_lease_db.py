"""The leases' database half (common/db/leases.py), on SQLite and
PostgreSQL: hosts picked for the whole window or nothing stored, every
change checked against the tables and made by conditional UPDATEs, one
claim per event, retries then ERROR."""

import threading

import pytest

from common import exception
from common import leases as rules
from common.db import engine
from common.db import leases as leases_db
from common.db import quotas
from common.leases import event as ev
from common.leases import lease as ls
from common.leases import reservation as rs
from tests.unit.leases.conftest import HOUR
from tests.unit.leases.conftest import event_of
from tests.unit.leases.conftest import force
from tests.unit.leases.conftest import host_spec
from tests.unit.leases.test_rules import ALL
from tests.unit.leases.test_rules import EXPECTED_LEASE

TIMEOUT = 600


# --- create ------------------------------------------------------------------

def test_create_stores_a_pending_lease(ldb, ctx, clock):
    start = clock() + HOUR
    lease = ldb.create_lease(ctx, name='l1', start=start, end=start + HOUR,
                             before_end=start + HOUR / 2, on_end='stop',
                             reservations=[host_spec(2)])
    assert (lease['status'], lease['name'], lease['project_id'],
            lease['on_end']) == (ls.PENDING, 'l1', 'demo', 'stop')
    (res,) = lease['reservations']
    assert (res['status'], res['hosts']) == (rs.PENDING, ['h1', 'h2'])
    assert [(e['event_type'], e['time'], e['status'])
            for e in lease['events']] == [
        ('start_lease', start, ev.UNDONE),
        ('before_end_lease', start + HOUR / 2, ev.UNDONE),
        ('end_lease', start + HOUR, ev.UNDONE)]
    assert ldb.get_lease(lease['id']) == lease


def test_not_enough_hosts_stores_nothing(ldb, make_lease):
    with pytest.raises(exception.NotEnoughHosts) as err:
        make_lease(count=4)
    assert err.value.code == 409
    assert 'needs at least 4 host(s)' in err.value.message
    assert '3 enabled host(s) of the reservable pool match' in (
        err.value.message)
    assert ldb.list_leases() == []


def test_overlapping_leases_are_refused(ldb, make_lease):
    held = [make_lease()['reservations'][0]['hosts'] for _ in range(3)]
    assert sorted(h for hosts in held for h in hosts) == ['h1', 'h2', 'h3']
    with pytest.raises(exception.NotEnoughHosts) as err:
        make_lease(start_in=HOUR / 2)       # overlaps all three
    assert '3 held by other leases then' in err.value.message
    assert len(ldb.list_leases()) == 3
    # the next window, starting as they end, is free
    assert make_lease(start_in=2 * HOUR)['status'] == ls.PENDING


@pytest.mark.parametrize('props,hosts', [
    ('[">=", "$memory_mb", "16384"]', ['h2']),
    ('["and", [">=", "$vcpus", "16"], ["!=", "$name", "h2"]]', ['h3']),
    ('["or", ["==", "$name", "h1"], ["==", "$hypervisor_hostname", "h3"]]',
     ['h1']),
    ('', ['h1']),
])
def test_hypervisor_properties_choose_hosts(make_lease, props, hosts):
    assert make_lease(props=props)['reservations'][0]['hosts'] == hosts


@pytest.mark.parametrize('props,words', [
    ('[">="', 'It is not JSON'),
    ('[">=", "$colour", "red"]', 'Unknown host field'),
    ('["~", "$vcpus", "2"]', 'is not [OPERATOR'),
    ('[">=", "$vcpus", "many"]', 'compares with a number'),
    ('{"vcpus": 2}', 'Expected a list'),
    ('["and"]', 'needs at least one condition'),
])
def test_bad_hypervisor_properties_name_the_field(make_lease, props, words):
    with pytest.raises(exception.Invalid) as err:
        make_lease(props=props)
    assert err.value.message.startswith(
        'Invalid input for field/attribute reservations.0.'
        'hypervisor_properties. Value: ')
    assert words in err.value.message


def test_disabled_hosts_are_not_picked(ldb, statedb, make_lease):
    statedb.set_host_enabled('h1', False, 'maintenance')
    assert make_lease()['reservations'][0]['hosts'] == ['h2']


# --- begin and settle, from every status -------------------------------------

@pytest.mark.parametrize('op', ['update', 'delete'])
@pytest.mark.parametrize('status', ALL)
def test_begin_from_every_status(ldb, make_lease, status, op):
    lease = force(ldb, make_lease()['id'], status)
    target = rules.OPERATIONS[op].status
    if target not in EXPECTED_LEASE[status]:
        with pytest.raises(exception.LeaseActionNotAllowed) as err:
            ldb.begin(lease['id'], op)
        assert 'its status is %s' % status in err.value.message
        assert ldb.get_lease(lease['id']) == lease      # nothing changed
        return
    _before, after = ldb.begin(lease['id'], op)
    assert after['status'] == target


def test_update_is_denied_while_an_event_is_in_progress(ldb, make_lease):
    lease = force(ldb, make_lease()['id'], ls.ACTIVE,
                  (rs.ACTIVE, ev.DONE, ev.IN_PROGRESS))
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        ldb.begin(lease['id'], 'update')
    assert 'a UPDATING lease cannot have end_lease IN_PROGRESS' in (
        err.value.message)
    assert ldb.get_lease(lease['id'])['status'] == ls.ACTIVE


@pytest.mark.parametrize('status', rules.STABLE)
def test_an_update_settles_where_its_events_say(ldb, make_lease, status):
    lease = force(ldb, make_lease()['id'], status)
    assert ldb.begin(lease['id'], 'update')[1]['status'] == ls.UPDATING
    assert ldb.settle(lease['id'], 'update')['status'] == status


def test_settle_needs_the_operations_status(ldb, make_lease):
    lease = make_lease()
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        ldb.settle(lease['id'], 'update')
    assert 'its status is PENDING and update needs UPDATING' in (
        err.value.message)


def test_unknown_lease(ldb):
    with pytest.raises(exception.LeaseNotFound) as err:
        ldb.begin('nope', 'delete')
    assert err.value.code == 404


# --- the periodic job's claims -----------------------------------------------

def _claim(ldb, lease, event_type, clock, max_attempts=2):
    """Claim when due; runs in progress are never stale here."""
    event = event_of(lease, event_type)
    clock.now = max(clock.now, event['time'])
    return ldb.claim_event(event['id'], stale_before=clock() - 10 * HOUR,
                           max_attempts=max_attempts)


CLAIMABLE = {'start_lease': {ls.PENDING}, 'end_lease': {ls.ACTIVE}}


@pytest.mark.parametrize('event_type', ['start_lease', 'end_lease'])
@pytest.mark.parametrize('status', ALL)
def test_claim_from_every_status(ldb, make_lease, clock, status, event_type):
    lease = force(ldb, make_lease()['id'], status)
    if event_type == 'end_lease' and status == ls.ERROR:
        # ERROR -> TERMINATING is allowed, but not with a start in ERROR
        with pytest.raises(exception.LeaseActionNotAllowed) as err:
            _claim(ldb, lease, event_type, clock)
        assert 'a TERMINATING lease cannot have' in err.value.message
        return
    claimed = _claim(ldb, lease, event_type, clock)
    if status not in CLAIMABLE[event_type]:
        assert claimed is None
        assert ldb.get_lease(lease['id']) == lease
        return
    after, event, run_id = claimed
    assert after['status'] == rules.operation_of(event_type).status
    assert (event['status'], event['run_id'], event['attempts']) == (
        ev.IN_PROGRESS, run_id, 1)


def test_an_event_is_not_claimed_before_its_time(ldb, make_lease, clock):
    event = event_of(make_lease(), 'start_lease')
    assert ldb.claim_event(event['id'], stale_before=clock() - HOUR,
                           max_attempts=2) is None
    assert ldb.due_events(now=clock(), stale_before=clock() - HOUR) == []


def test_two_conductors_claim_one_event_once(db, ldb, make_lease, clock):
    lease = make_lease()
    clock.advance(HOUR.total_seconds())
    event = event_of(lease, 'start_lease')
    second = engine.Database(db.url)
    try:
        dbs = [ldb, leases_db.LeaseDB(second, clock=clock)] * 4
        won = []
        barrier = threading.Barrier(len(dbs))

        def claim(one):
            barrier.wait()
            won.append(one.claim_event(event['id'],
                                       stale_before=clock() - HOUR,
                                       max_attempts=2))
        threads = [threading.Thread(target=claim, args=(one,)) for one in dbs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        second.dispose()
    claimed = [c for c in won if c is not None]
    assert len(claimed) == 1
    assert event_of(ldb.get_lease(lease['id']), 'start_lease')['attempts'] == 1


def test_a_failed_run_is_retried_then_error(ldb, make_lease, clock):
    lease = make_lease()
    _after, event, run_id = _claim(ldb, lease, 'start_lease', clock)
    assert ldb.fail_event(lease['id'], 'start_lease', run_id, error='boom',
                          max_attempts=2) is False
    released = ldb.get_lease(lease['id'])
    assert released['status'] == ls.STARTING
    assert event_of(released, 'start_lease')['run_id'] is None
    due = ldb.due_events(now=clock(), stale_before=clock() - HOUR)
    assert [e['id'] for e in due] == [event['id']]

    _after, again, run2 = _claim(ldb, lease, 'start_lease', clock)
    assert (again['attempts'], run2 != run_id) == (2, True)
    assert ldb.fail_event(lease['id'], 'start_lease', run2, error='boom 2',
                          max_attempts=2) is True
    failed = ldb.get_lease(lease['id'])
    assert failed['status'] == ls.ERROR
    assert 'start_lease failed after 2 attempt(s): boom 2' in (
        failed['status_reason'])
    assert event_of(failed, 'start_lease')['status'] == ev.ERROR
    assert failed['reservations'][0]['status'] == rs.ERROR


def test_a_stale_run_is_taken_over_and_cannot_finish(ldb, make_lease, clock):
    lease = make_lease()
    _after, event, old_run = _claim(ldb, lease, 'start_lease', clock)
    # a second conductor: not yet stale
    assert ldb.claim_event(event['id'], stale_before=clock() - HOUR,
                           max_attempts=3) is None
    clock.advance(TIMEOUT + 1)
    _after, taken, new_run = ldb.claim_event(
        event['id'], stale_before=clock().replace() - HOUR / 6,
        max_attempts=3)
    assert taken['attempts'] == 2 and new_run != old_run
    with pytest.raises(exception.LeaseEventPreempted):
        ldb.activate(lease['id'], old_run)
    with pytest.raises(exception.LeaseEventPreempted):
        ldb.finish_event(lease['id'], 'start_lease', old_run)
    ldb.activate(lease['id'], new_run)
    assert ldb.finish_event(lease['id'], 'start_lease',
                            new_run)['status'] == ls.ACTIVE


def test_a_run_with_no_attempts_left_is_failed_at_claim(ldb, make_lease,
                                                        clock):
    lease = make_lease()
    _after, event, _run = _claim(ldb, lease, 'start_lease', clock,
                                 max_attempts=1)
    clock.advance(TIMEOUT + 1)
    after, _event, run_id = ldb.claim_event(
        event['id'], stale_before=clock() - HOUR / 6, max_attempts=1)
    assert run_id is None
    assert after['status'] == ls.ERROR
    failed = ldb.get_lease(lease['id'])
    assert failed['status'] == ls.ERROR
    assert 'its conductor stopped' in failed['status_reason']


# --- update ------------------------------------------------------------------

def _update(ldb, lease, **values):
    ldb.begin(lease['id'], 'update')
    try:
        return ldb.update_lease(lease['id'], values, recheck=True)
    finally:
        ldb.settle(lease['id'], 'update')


def test_update_moves_the_events_and_keeps_the_hosts(ldb, make_lease):
    lease = make_lease()
    end = lease['end_date'] + HOUR
    after = _update(ldb, lease, end_date=end, start_date=lease['start_date'],
                    before_end_date=None)
    assert event_of(after, 'end_lease')['time'] == end
    assert after['reservations'][0]['hosts'] == ['h1']
    assert ldb.get_lease(lease['id'])['status'] == ls.PENDING


def test_update_of_a_pending_lease_picks_hosts_again(ldb, make_lease):
    first = make_lease(count=2)                 # h1, h2
    later = make_lease(start_in=3 * HOUR)       # h1
    after = _update(ldb, later, start_date=first['start_date'],
                    end_date=first['end_date'], before_end_date=None)
    assert after['reservations'][0]['hosts'] == ['h3']
    with pytest.raises(exception.NotEnoughHosts):
        _update(ldb, make_lease(start_in=5 * HOUR),
                start_date=first['start_date'], end_date=first['end_date'],
                before_end_date=None)


def test_update_of_an_active_lease_keeps_its_hosts(ldb, make_lease):
    lease = force(ldb, make_lease()['id'], ls.ACTIVE)
    make_lease(start_in=2 * HOUR, count=3)      # every host, right after
    with pytest.raises(exception.NotEnoughHosts) as err:
        _update(ldb, lease, start_date=lease['start_date'],
                end_date=lease['end_date'] + HOUR, before_end_date=None)
    assert 'it has started, so it keeps its hosts' in err.value.message
    assert ldb.get_lease(lease['id']) == dict(
        lease, updated_at=ldb.get_lease(lease['id'])['updated_at'])


# --- the reservable pool and the lease quotas (issue 19, item 5) -------------

def test_only_hosts_of_the_reservable_pool_are_leased(ldb, make_lease):
    ldb.set_reservable('h1', False)
    ldb.set_reservable('h2', False)
    assert make_lease()['reservations'][0]['hosts'] == ['h3']
    with pytest.raises(exception.Conflict):         # h3 is held now
        ldb.set_reservable('h3', False)
    with pytest.raises(exception.HostNotFound):
        ldb.set_reservable('nosuch', True)
    assert [h['name'] for h in ldb.reservable_hosts()] == ['h3']


def _quota(ldb, **limits):
    defaults = dict.fromkeys(quotas.LIMITS, quotas.UNLIMITED)
    defaults.update(limits)
    ldb.quota = quotas.Settings(defaults)


def test_a_projects_leases_stay_within_lease_hosts(ldb, make_lease):
    _quota(ldb, lease_hosts=2)
    first = make_lease(count=2)
    assert len(first['reservations'][0]['hosts']) == 2
    with pytest.raises(exception.QuotaExceeded) as err:
        make_lease(start_in=3 * HOUR)       # another window, same quota
    assert 'lease_hosts' in err.value.message
    ldb.begin(first['id'], 'delete')
    ldb.remove(first['id'])
    assert make_lease(start_in=3 * HOUR)['status'] == ls.PENDING


def test_a_lease_longer_than_lease_hours_is_refused(ldb, make_lease):
    _quota(ldb, lease_hours=2)
    assert make_lease(hours=2)['status'] == ls.PENDING
    with pytest.raises(exception.QuotaExceeded) as err:
        make_lease(hours=3, start_in=5 * HOUR)
    assert 'lease_hours' in err.value.message
