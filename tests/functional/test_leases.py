"""Leases on a whole plane (one conductor, fake hosts, the in-memory bus)
with the fake clock: a lease goes PENDING -> ACTIVE -> TERMINATED with its
events; during it, instances that name its reservation land only on its
hosts and no other instance does; at its end they are deleted (or
stopped); overlapping leases are refused; two conductors never run one
event twice. The lease job is run by the test (``run_once``), never by a
timer."""

import datetime
import threading

import pytest

from common import context
from common import exception
from common.db import engine
from common.db import leases as leases_db
from common.leases import event as ev
from common.leases import lease as ls
from common.leases import reservation as rs
from common.states import vm
from conductor.leases import events
from conductor.leases import rpcapi as lease_rpcapi
from tests.functional.conftest import build
from tests.functional.conftest import faults
from tests.functional.conftest import reservable
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import wait_heartbeat
from tests.functional.conftest import wait_idle

HOUR = datetime.timedelta(hours=1)
HUGE = 'huge:1:%d:1' % (10 ** 9)


class Recorder:
    """Keeps the lease notifications, and still sends them."""

    def __init__(self, notifier):
        self.notifier = notifier
        self.sent = []

    def info(self, ctx, event_type, name, data):
        self.sent.append((event_type, data['id'], data['status']))
        self.notifier.info(ctx, event_type, name, data)


@pytest.fixture
def lplane(conf, make_plane, clock):
    set_opts(conf, 'conductor', flavors=conf.conductor.flavors + [HUGE])
    set_opts(conf, 'leases', before_end=30)
    plane = make_plane(hosts=3, clock=clock)
    reservable(plane)
    flows = plane.conductor.leases.flows
    flows.notifier = Recorder(flows.notifier)
    plane.leases = lease_rpcapi.LeaseAPI(plane.client)
    return plane


def _body(clock, *, start_in=HOUR, hours=1, count=1, **extra):
    start = clock() + start_in
    return dict({'name': 'lease', 'start_date': start.isoformat(),
                 'end_date': (start + hours * HOUR).isoformat(),
                 'reservations': [{'resource_type': 'physical:host',
                                   'min': count, 'max': count}]}, **extra)


def _advance(plane, clock, delta):
    """Move the clock; wait until every agent has beaten since (the
    scheduler takes silent hosts for down)."""
    clock.now += delta
    for host in plane.host_names:
        wait_heartbeat(plane, host, since=clock())


def _run_job(plane):
    return plane.conductor.leases.periodic.run_once()


def _other_project(ctx):
    return context.RequestContext(user_id='bob', project_id='other',
                                  roles=['member'])


def test_a_lease_from_pending_to_terminated(lplane, clock, ctx):
    lease = lplane.leases.create_lease(ctx, _body(clock))
    assert lease['status'] == ls.PENDING
    res = lease['reservations'][0]
    (reserved,) = res['hosts']
    early = build(lplane, ctx, reservation_id=res['id'])
    assert early['vm_state'] == vm.ERROR, summary(early)     # not started
    assert 'is not usable now: its lease %s is PENDING' % lease['id'] in (
        lplane.statedb.list_actions(early['uuid'])[-1]['message'])
    # before the start the host is in the common pool (spread: one each)
    there = [build(lplane, ctx, name='there%d' % i) for i in range(3)]
    assert reserved in {i['host'] for i in there}
    assert _run_job(lplane) == {}

    _advance(lplane, clock, HOUR)
    assert _run_job(lplane) == {'done': 1}
    active = lplane.leases.get_lease(ctx, lease['id'])
    assert active['status'] == ls.ACTIVE
    assert active['reservations'][0]['status'] == rs.ACTIVE
    mine = [build(lplane, ctx, name='mine%d' % i, reservation_id=res['id'])
            for i in range(3)]
    assert {(i['vm_state'], i['host']) for i in mine} == {(vm.ACTIVE,
                                                           reserved)}
    others = [build(lplane, ctx, name='other%d' % i) for i in range(6)]
    assert all(i['vm_state'] == vm.ACTIVE and i['host'] != reserved
               for i in others), [summary(i) for i in others]
    theirs = build(lplane, _other_project(ctx), reservation_id=res['id'])
    assert theirs['vm_state'] == vm.ERROR
    assert 'reservation %s does not exist' % res['id'] in (
        lplane.statedb.list_actions(theirs['uuid'])[-1]['message'])

    _advance(lplane, clock, HOUR / 2)
    assert _run_job(lplane) == {'done': 1}                 # before_end
    _advance(lplane, clock, HOUR / 2)
    assert _run_job(lplane) == {'done': 1}                 # end
    ended = lplane.leases.get_lease(ctx, lease['id'])
    assert ended['status'] == ls.TERMINATED
    assert ended['reservations'][0]['status'] == rs.DELETED
    assert [(e['event_type'], e['status']) for e in ended['events']] == [
        ('start_lease', ev.DONE), ('before_end_lease', ev.DONE),
        ('end_lease', ev.DONE)]
    for inst in mine:
        assert lplane.statedb.get_instance(inst['uuid'])['vm_state'] == (
            vm.HARD_DELETED)
        assert lplane.statedb.list_actions(inst['uuid'])[-1]['user_id'] == (
            context.SYSTEM_USER)
    for inst in others + there:     # even the one already on the host
        assert lplane.statedb.get_instance(inst['uuid'])['vm_state'] == (
            vm.ACTIVE)
    assert [(t, s) for t, _, s in
            lplane.conductor.leases.flows.notifier.sent] == [
        ('lease.create', ls.PENDING), ('lease.start', ls.ACTIVE),
        ('lease.before_end', ls.ACTIVE), ('lease.end', ls.TERMINATED)]
    # the host is back in the common pool
    after = [build(lplane, ctx, name='after%d' % i) for i in range(4)]
    assert reserved in {i['host'] for i in after}


def test_on_end_stop_stops_the_instances(lplane, clock, ctx):
    lease = lplane.leases.create_lease(ctx, _body(clock, start_in=HOUR * 0,
                                                  start_date='now',
                                                  on_end='stop'))
    assert _run_job(lplane) == {'done': 1}
    res_id = lease['reservations'][0]['id']
    inst = build(lplane, ctx, reservation_id=res_id)
    assert inst['vm_state'] == vm.ACTIVE

    _advance(lplane, clock, HOUR)
    assert _run_job(lplane) == {'done': 2}          # before_end and end
    stopped = wait_idle(lplane, inst['uuid'])
    assert stopped['vm_state'] == vm.STOPPED, summary(stopped)
    assert lplane.statedb.list_actions(inst['uuid'])[-1]['action'] == 'stop'
    assert lplane.leases.get_lease(ctx, lease['id'])['status'] == (
        ls.TERMINATED)


def test_on_end_stop_waits_for_a_busy_instance(lplane, clock, ctx):
    """An instance that cannot stop at the end (another task runs) makes
    the end_lease event run again at the next pass, not skip it: the lease
    terminates once that instance is stopped too."""
    lease = lplane.leases.create_lease(ctx, _body(clock, start_in=HOUR * 0,
                                                  start_date='now',
                                                  on_end='stop'))
    assert _run_job(lplane) == {'done': 1}
    res_id = lease['reservations'][0]['id']
    idle, busy = (build(lplane, ctx, name=n, reservation_id=res_id)
                  for n in ('idle', 'busy'))
    faults(lplane, busy['host']).set_fault('reboot', 'hang')
    lplane.client.run_action(ctx, busy['uuid'], 'reboot', {})

    _advance(lplane, clock, HOUR)
    assert _run_job(lplane) == {'done': 1, 'retry': 1}   # before_end; end
    assert wait_idle(lplane, idle['uuid'])['vm_state'] == vm.STOPPED
    ending = lplane.leases.get_lease(ctx, lease['id'])
    assert ending['status'] != ls.TERMINATED
    end = [e for e in ending['events'] if e['event_type'] == 'end_lease']
    assert end[0]['status'] == ev.IN_PROGRESS, end     # to run again

    faults(lplane, busy['host']).clear_faults()
    assert wait_idle(lplane, busy['uuid'])['vm_state'] == vm.ACTIVE
    assert _run_job(lplane) == {'done': 1}
    assert wait_idle(lplane, busy['uuid'])['vm_state'] == vm.STOPPED
    assert lplane.leases.get_lease(ctx, lease['id'])['status'] == (
        ls.TERMINATED)


def test_a_full_reservation_buries_with_the_reason(lplane, clock, ctx):
    lease = lplane.leases.create_lease(ctx, _body(clock, start_in=HOUR * 0,
                                                  start_date='now'))
    _run_job(lplane)
    res = lease['reservations'][0]
    inst = build(lplane, ctx, flavor='huge', reservation_id=res['id'])
    assert inst['vm_state'] == vm.ERROR
    message = lplane.statedb.list_actions(inst['uuid'])[-1]['message']
    assert 'none of the rest has room for flavor huge' in message
    assert 'reservation %s holds only %s' % (res['id'], res['hosts'][0]) in (
        message)


def test_overlapping_leases_are_refused(lplane, clock, ctx):
    lplane.leases.create_lease(ctx, _body(clock, count=2))
    with pytest.raises(exception.NotEnoughHosts) as err:
        lplane.leases.create_lease(ctx, _body(clock, start_in=HOUR / 2,
                                              count=2))
    assert 'needs at least 2 host(s)' in err.value.message
    assert '2 held by other leases then' in err.value.message
    assert len(lplane.leases.list_leases(ctx)) == 1
    # one host is still free then, and all are free afterwards
    lplane.leases.create_lease(ctx, _body(clock, start_in=HOUR / 2))
    lplane.leases.create_lease(ctx, _body(clock, start_in=2 * HOUR, count=3))
    assert len(lplane.leases.list_leases(ctx)) == 3


def test_delete_of_an_active_lease_ends_it_first(lplane, clock, ctx):
    lease = lplane.leases.create_lease(ctx, _body(clock, start_in=HOUR * 0,
                                                  start_date='now'))
    _run_job(lplane)
    inst = build(lplane, ctx, reservation_id=lease['reservations'][0]['id'])
    lplane.leases.delete_lease(ctx, lease['id'])
    assert lplane.statedb.get_instance(inst['uuid'])['vm_state'] == (
        vm.HARD_DELETED)
    with pytest.raises(exception.LeaseNotFound):
        lplane.leases.get_lease(ctx, lease['id'])
    assert lplane.conductor.leases.flows.notifier.sent[-1][0] == (
        'lease.delete')


def test_two_conductors_never_run_one_event_twice(lplane, conf, clock, ctx):
    leases = [lplane.leases.create_lease(ctx, _body(clock))
              for _ in range(3)]
    own = lplane.conductor.leases
    second_db = engine.Database.from_conf(conf)
    ran = []
    lock = threading.Lock()
    try:
        runners = [own.runner, events.EventRunner(
            db=leases_db.LeaseDB(second_db, clock=clock), flows=own.flows,
            conf=conf)]
        for name, runner in zip(('first', 'second'), runners, strict=True):
            start = runner._work['start_lease']

            def counted(lease, run_id, start=start, name=name):
                with lock:
                    ran.append((lease['id'], name))
                start(lease, run_id)
            runner._work['start_lease'] = counted
        _advance(lplane, clock, HOUR)
        outcomes = []
        barrier = threading.Barrier(4)

        def run(runner):
            barrier.wait()
            outcomes.append(runner.run_due())
        threads = [threading.Thread(target=run, args=(r,))
                   for r in runners * 2]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        second_db.dispose()
    assert sorted(lease_id for lease_id, _ in ran) == sorted(
        lease['id'] for lease in leases)
    assert sum(o.get('done', 0) for o in outcomes) == 3
    for lease in leases:
        after = lplane.leases.get_lease(ctx, lease['id'])
        assert after['status'] == ls.ACTIVE
        assert [e['attempts'] for e in after['events']
                if e['event_type'] == 'start_lease'] == [1]
