"""A full power report, alone or carried by a heartbeat, on both backends.

On PostgreSQL the heartbeat, the read of the host's instances and the
confirm of the reports that say what is stored are one statement
(common.db.power._full_read_statement); on SQLite they are the separate
statements they always were. Whatever the path, the outcome must be the
same: these tests run on both and check what an operator relies on, i.e.
unchanged reports known as of the read, changed ones stored and reconciled,
a newer stored report kept, a missing domain stored as gone, a deleted
instance's domain destroyed, a new host's first heartbeat recorded; and, for
reports of events, an unchanged one known as of its own seq, and a report
numbered beyond power_seq's BIGINT ignored while the rest is stored.
"""

import pytest

from common.db import api
from common.states import power
from common.states import vm
from tests.conftest import HOST
from tests.unit.db import world as world_mod
from tests.unit.db.world import CAPACITY
from tests.unit.db.world import report_of

READ = 20           # the seq of the agent's read of every domain


# The fixtures: the gateway, reconciler and results over SQLite or
# PostgreSQL (tests/conftest.py's statedb, once per backend).
conf = world_mod.conf
world = world_mod.world


def _full(world, reports, *, carried, host=HOST):
    """The report as the agent sends it: in a heartbeat (RPC 1.4) or on
    its own (an agent capped below)."""
    if carried:
        return world.results.heartbeat(
            world.ctx, host=host, capacity=CAPACITY, started_at=None,
            lost_tasks=[], version='9.9', power=(reports, READ))
    return world.results.power_report(world.ctx, host=host, reports=reports,
                                      full=READ)


def _power(world, uuid):
    inst = world.db.get_instance(uuid)
    return (inst['vm_state'], inst['power_state'], inst['power_reason'],
            inst['power_seq'])


CARRIED = pytest.mark.parametrize('carried', [True, False],
                                  ids=['in-heartbeat', 'alone'])


@CARRIED
def test_reports_that_say_what_is_stored_are_known_as_of_the_read(
        world, clock, carried):
    running = world.idle(vm.ACTIVE)
    stopped = world.idle(vm.STOPPED)
    paused = world.idle(vm.PAUSED)
    world.report(running, power.RUNNING, seq=10)
    world.report(stopped, power.SHUTDOWN, 'host', seq=11)
    world.report(paused, power.PAUSED, 'unknown', seq=12)
    now = clock.advance(5)

    answer = _full(world, [report_of(running, power.RUNNING, 21),
                           report_of(stopped, power.SHUTDOWN, 22, 'host'),
                           report_of(paused, power.PAUSED, 23, 'unknown')],
                   carried=carried)

    assert answer['destroy'] == [] and answer['orphans']['uuids'] == []
    assert _power(world, running) == (vm.ACTIVE, power.RUNNING, None, READ)
    assert _power(world, stopped) == (vm.STOPPED, power.SHUTDOWN, 'host',
                                      READ)
    assert _power(world, paused) == (vm.PAUSED, power.PAUSED, 'unknown', READ)
    assert world.db.get_instance(running)['power_reported_at'] == now
    assert world.flows.sent == []


@CARRIED
def test_a_changed_report_is_stored_and_reconciled_beside_unchanged_ones(
        world, carried):
    same = world.idle(vm.ACTIVE)
    shut = world.idle(vm.ACTIVE, user_shutdown='stop')
    paused = world.idle(vm.ACTIVE)      # the same reason, another state
    for uuid in (same, shut, paused):
        world.report(uuid, power.RUNNING, seq=10)

    _full(world, [report_of(same, power.RUNNING, 21),
                  report_of(shut, power.SHUTDOWN, 22, 'guest'),
                  report_of(paused, power.PAUSED, 23)],
          carried=carried)

    assert _power(world, same) == (vm.ACTIVE, power.RUNNING, None, READ)
    assert _power(world, shut) == (vm.STOPPED, power.SHUTDOWN, 'guest', 22)
    assert _power(world, paused)[1:] == (power.PAUSED, None, 23)


@CARRIED
def test_a_newer_stored_report_is_kept(world, carried):
    uuid = world.idle(vm.ACTIVE)
    world.report(uuid, power.RUNNING, seq=30)       # newer than the read

    _full(world, [report_of(uuid, power.RUNNING, 21)], carried=carried)

    assert _power(world, uuid) == (vm.ACTIVE, power.RUNNING, None, 30)


@CARRIED
def test_a_domain_the_read_did_not_find_is_gone(world, carried):
    listed = world.idle(vm.ACTIVE)
    missing = world.idle(vm.ACTIVE)
    for uuid in (listed, missing):
        world.report(uuid, power.RUNNING, seq=10)

    _full(world, [report_of(listed, power.RUNNING, 21)], carried=carried)

    assert _power(world, listed)[1:] == (power.RUNNING, None, READ)
    inst = world.db.get_instance(missing)
    assert (inst['power_state'], inst['power_seq']) == (power.NOSTATE, READ)


@CARRIED
def test_a_deleted_instances_domain_is_destroyed_not_confirmed(world,
                                                               carried):
    deleted = world.idle(vm.HARD_DELETED)
    kept = world.idle(vm.ACTIVE)
    world.report(kept, power.RUNNING, seq=10)

    answer = _full(world, [report_of(deleted, power.RUNNING, 21),
                           report_of(kept, power.RUNNING, 22)],
                   carried=carried)

    assert answer['destroy'] == [deleted]
    assert world.db.get_instance(deleted)['vm_state'] == vm.HARD_DELETED
    assert _power(world, kept)[3] == READ


@CARRIED
def test_reports_of_any_spelling_are_compared_alike(world, carried):
    """A report whose fields are not the plain types (a state by name, a
    seq as text) is compared in Python, as on every backend; a uuid sent
    twice is not confirmed twice; a state no hypervisor has is ignored,
    the heartbeat carrying it stored all the same."""
    named, text_seq, twice, bad = (world.idle(vm.ACTIVE) for _ in range(4))
    for uuid in (named, text_seq, twice, bad):
        world.report(uuid, power.RUNNING, seq=10)

    answer = _full(world, [report_of(named, 'running', 21),
                           report_of(text_seq, power.RUNNING, '22'),
                           report_of(twice, power.RUNNING, 23),
                           report_of(twice, power.RUNNING, 24),
                           report_of(bad, 2 ** 40, 25)],   # logged, ignored
                   carried=carried)

    for uuid in (named, text_seq, twice):
        assert _power(world, uuid) == (vm.ACTIVE, power.RUNNING, None, READ)
    assert _power(world, bad) == (vm.ACTIVE, power.RUNNING, None, 10)
    assert answer['destroy'] == []


def test_a_new_hosts_first_heartbeat_records_it_with_its_report(world, clock):
    now = clock.advance(1)
    stray = api.new_uuid()          # a domain no instance owns

    answer = _full(world, [report_of(stray, power.RUNNING, 21)],
                   carried=True, host='newhost')

    assert answer['orphans']['uuids'] == [stray]
    host = world.db.get_host('newhost')
    assert (host['vcpus'], host['memory_mb'], host['last_heartbeat']) == (
        CAPACITY['vcpus'], CAPACITY['memory_mb'], now)
    assert host['free_memory_mb'] == CAPACITY['memory_mb']
    assert [(s['version'], s['last_seen']) for s in world.db.list_services()
            if s['host'] == 'newhost'] == [('9.9', now)]


def test_a_known_hosts_heartbeat_with_its_report_keeps_its_usage(world,
                                                                 clock):
    _full(world, [], carried=True)
    before = world.db.get_host(HOST)
    world.db.db.transaction(lambda conn: conn.exec_driver_sql(
        "UPDATE hosts SET used_memory_mb = 1024 WHERE name = '%s'" % HOST))
    now = clock.advance(10)

    _full(world, [], carried=True)

    host = world.db.get_host(HOST)
    assert (host['last_heartbeat'], host['created_at']) == (
        now, before['created_at'])
    assert host['used_memory_mb'] == 1024
    assert host['free_memory_mb'] == CAPACITY['memory_mb'] - 1024
    assert [s['last_seen'] for s in world.db.list_services()
            if s['host'] == HOST] == [now]


def test_an_unchanged_event_report_is_known_as_of_its_own_seq(world, clock):
    """Reports of events (no full read): one that says what is stored
    moves power_seq to its seq, so a late, older one changes nothing."""
    running = world.idle(vm.ACTIVE)
    world.report(running, power.RUNNING, seq=10)
    now = clock.advance(5)

    world.results.power_report(world.ctx, host=HOST, reports=[
        report_of(running, power.RUNNING, 12)])
    assert _power(world, running) == (vm.ACTIVE, power.RUNNING, None, 12)
    assert world.db.get_instance(running)['power_reported_at'] == now

    answer = world.results.power_report(world.ctx, host=HOST, reports=[
        report_of(running, power.SHUTDOWN, 11, 'guest')])
    assert answer['destroy'] == [] and answer['orphans']['uuids'] == []
    assert _power(world, running) == (vm.ACTIVE, power.RUNNING, None, 12)
    assert world.flows.sent == []


@pytest.mark.parametrize('seq', [2 ** 63, 2 ** 70, -3])
@CARRIED
def test_a_report_numbered_beyond_bigint_is_ignored_and_the_rest_stored(
        world, carried, seq):
    running = world.idle(vm.ACTIVE)
    other = world.idle(vm.ACTIVE)
    world.report(running, power.RUNNING, seq=10)
    world.report(other, power.RUNNING, seq=11)

    answer = _full(world, [report_of(running, power.SHUTDOWN, seq, 'guest'),
                           report_of(other, power.RUNNING, 21)],
                   carried=carried)

    assert answer['destroy'] == [] and answer['orphans']['uuids'] == []
    assert _power(world, running)[:3] == (vm.ACTIVE, power.RUNNING, None)
    assert _power(world, other) == (vm.ACTIVE, power.RUNNING, None, READ)
    if carried:
        assert world.db.get_host(HOST)['last_heartbeat'] is not None
