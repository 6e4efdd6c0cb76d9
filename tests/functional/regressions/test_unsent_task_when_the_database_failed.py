"""A task claimed just before the database failed held its instance for up
to an hour.

A flow claims its task in one transaction, then schedules and allocates in
others before it sends the task to an agent. When the database stopped in
between, the request answered 503 but the task stayed claimed: the instance
sat in BUILDING (or RESIZING...) until the reaper's timeout (1800 s for a
build) although no agent ever had it. And when the database failed only
after the send, while the flow read the instance again for its answer, the
request answered 503 for a task that was running. Found by the PostgreSQL
outage test (tests/integration/test_faults_postgres.py). Fixed: the
conductor ends such a task (failed, nothing to roll back: a build ends in
ERROR) as soon as the database answers again; a task already sent answers
with the instance as claimed.
"""

from common import exception
from common import flavors
from common import states
from common.states import vm
from tests.functional.conftest import active
from tests.functional.conftest import log_of
from tests.functional.conftest import resources
from tests.functional.conftest import used
from tests.functional.conftest import wait_idle
from tests.functional.test_faults_messages import _clean


def _down(*args, **kwargs):
    raise exception.DBUnavailable(attempts=5, seconds=0.8,
                                  reason='connection refused')


def _down_for(calls, real):
    """``real``, once the database has refused ``calls`` calls."""
    refused = []

    def call(*args, **kwargs):
        if len(refused) < calls:
            refused.append(args)
            _down()
        return real(*args, **kwargs)
    call.refused = refused
    return call


def test_a_build_not_yet_sent_ends_when_the_database_returns(
        plane, ctx, monkeypatch):
    monkeypatch.setattr(plane.conductor.scheduler, 'select_and_allocate',
                        _down)
    gateway = plane.conductor.gateway
    fail = _down_for(2, gateway.fail)
    monkeypatch.setattr(gateway, 'fail', fail)

    try:
        plane.client.create_instance(ctx, name='vm', flavor='tiny',
                                     image_ref='cirros')
    except exception.DBUnavailable as err:
        assert 'database is unavailable' in str(err)
    else:
        raise AssertionError('the create did not fail')

    [inst] = plane.statedb.list_instances()
    ended = wait_idle(plane, inst['uuid'])
    assert len(fail.refused) == 2        # tried again until it answered
    assert ended['vm_state'] == vm.ERROR
    [entry] = log_of(plane, inst['uuid'])
    assert (entry['action'], entry['result']) == ('build',
                                                  states.RESULT_ERROR)
    assert 'before the task reached its agent' in entry['message']
    assert plane.statedb.list_allocations(instance_uuid=inst['uuid']) == []
    _clean(plane)


def test_a_resize_not_yet_sent_is_rolled_back(plane, ctx, monkeypatch):
    inst = active(plane, ctx, flavor='tiny')
    monkeypatch.setattr(plane.conductor.scheduler, 'select_and_allocate',
                        _down)

    try:
        plane.client.run_action(ctx, inst['uuid'], 'resize',
                                {'flavor': 'small'})
    except exception.DBUnavailable:
        pass
    else:
        raise AssertionError('the resize did not fail')

    ended = wait_idle(plane, inst['uuid'])
    assert (ended['vm_state'], ended['flavor_name']) == (vm.ACTIVE, 'tiny')
    entry = log_of(plane, inst['uuid'])[-1]
    assert (entry['action'], entry['result']) == (
        'resize', states.RESULT_ROLLED_BACK)
    assert used(plane, inst['host']) == resources(
        flavors.configured(plane.conf, 'tiny'))
    _clean(plane)


class _UnreadableDB:
    """The conductor's database as the flows see it, where reading one
    instance fails (the rest works)."""

    def __init__(self, statedb):
        self._statedb = statedb

    def __getattr__(self, name):
        return getattr(self._statedb, name)

    get_instance = staticmethod(_down)


def test_a_build_sent_answers_though_the_database_fails(plane, ctx,
                                                        monkeypatch):
    flows = plane.conductor.flows
    monkeypatch.setattr(flows, 'db', _UnreadableDB(flows.db))

    made = plane.client.create_instance(ctx, name='vm', flavor='tiny',
                                        image_ref='cirros')

    assert (made['vm_state'], made['task_state']) == (vm.INITIALIZED,
                                                      'building')
    monkeypatch.undo()
    assert wait_idle(plane, made['uuid'])['vm_state'] == vm.ACTIVE
    _clean(plane)
