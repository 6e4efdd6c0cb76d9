"""What reaches the conductor over the bus is checked: an agent's word on a
task must carry the task's id and concern its own host (else refused and
logged as a security event); unknown methods and wrong arguments are
refused with a reason and the conductor carries on."""

import logging
import sys

import pytest

from common import context
from common import exception
from common import rpc
from common.states import power
from common.states import step
from compute_agent.virt import fake
from conductor import rpcapi
from tests.functional.conftest import faults
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_instance


@pytest.fixture
def hung(plane, ctx):
    """An instance whose build hangs on its host: a task is running."""
    for host in plane.host_names:
        faults(plane, host).set_fault('spawn', 'hang')
    inst = plane.client.create_instance(ctx, name='vm', flavor='tiny',
                                        image_ref='cirros')
    wait_instance(plane, inst['uuid'],
                  lambda i: i['progress_step'] == step.SPAWNING,
                  what='the build to spawn')
    # The step is reported before the spawn starts: until the spawn holds
    # in the fault, a test that clears it would see the build succeed.
    wait_for(_a_spawn_hangs, what='the spawn to hang')
    return plane.statedb.get_instance(inst['uuid'])


def _a_spawn_hangs():
    for top in sys._current_frames().values():
        frame = top
        while frame is not None:
            if frame.f_code is fake.FakeDriver._hang.__code__:
                return True
            frame = frame.f_back
    return False


@pytest.fixture
def agent_api(plane):
    """The conductor's API as an agent uses it (no database access)."""
    return rpcapi.ConductorAPI(plane.bus, plane.conf, timeout=5)


def _as_task(task_id):
    return context.get_admin_context(task_id=task_id)


def _unchanged(plane, inst):
    now = plane.statedb.get_instance(inst['uuid'])
    assert (now['vm_state'], now['task_state'], now['task_id']) == (
        inst['vm_state'], inst['task_state'], inst['task_id'])


def _security_logged(caplog, *words):
    wait_for(lambda: any(r.getMessage().startswith('SECURITY:')
                         and all(w in r.getMessage() for w in words)
                         for r in caplog.records),
             what='a security log line with %s' % (words,))


def test_a_result_without_a_task_id_is_refused(plane, hung, agent_api,
                                               caplog):
    caplog.set_level(logging.WARNING)
    for call, kwargs in (('task_finished', {'power': None}),
                         ('task_failed', {'error': 'x', 'rolled_back': True,
                                          'power': None}),
                         ('task_progress', {'step': 'spawning'})):
        with pytest.raises(exception.Forbidden):
            getattr(agent_api, call)(_as_task(None), host=hung['host'],
                                     instance_uuid=hung['uuid'], **kwargs)
    _security_logged(caplog, 'task_finished', 'no task_id', hung['uuid'])
    _unchanged(plane, hung)


def test_another_hosts_result_is_refused(plane, hung, agent_api, caplog):
    caplog.set_level(logging.WARNING)
    other = next(h for h in plane.host_names if h != hung['host'])
    with pytest.raises(exception.Forbidden) as err:
        agent_api.task_finished(_as_task(hung['task_id']), host=other,
                                instance_uuid=hung['uuid'],
                                power={'power_state': power.RUNNING,
                                       'reason': None, 'seq': 10 ** 9})
    assert hung['host'] in str(err.value)
    _security_logged(caplog, 'task_finished', 'from host %s' % other)
    _unchanged(plane, hung)
    assert plane.statedb.get_instance(hung['uuid'])['power_seq'] < 10 ** 9
    # The real agent's result is still taken: the build ends (the cleared
    # hang fails it) with the agent's own message.
    faults(plane, hung['host']).clear_faults()
    assert wait_idle(plane, hung['uuid'])['task_id'] is None
    last = plane.statedb.list_actions(hung['uuid'])[-1]
    assert 'hung until the fault was cleared' in last['message']


def test_unknown_methods_and_bad_arguments_leave_the_conductor_up(
        plane, agent_api, ctx):
    client = agent_api.client
    with pytest.raises(rpc.RemoteError) as err:
        client.call(ctx, 'no_such_method', x=1)
    assert 'no_such_method' in str(err.value)
    with pytest.raises((TypeError, rpc.RemoteError)) as err:
        client.call(ctx, 'heartbeat', host='h9', capacity='lots',
                    started_at=None, lost_tasks=[])
    assert 'str' in str(err.value)
    for bad in ({'host': 'h9'},                       # arguments missing
                {'host': 'h9', 'capacity': {}, 'started_at': 'yesterday',
                 'lost_tasks': []}):
        with pytest.raises((TypeError, KeyError, ValueError, rpc.RemoteError)):
            client.call(ctx, 'heartbeat', **bad)
    with pytest.raises((TypeError, AttributeError, rpc.RemoteError)):
        client.call(ctx, 'power_report', host='h9', reports='nonsense',
                    full=False)
    # Still answering, and nothing was made of the bad heartbeats.
    assert 'h9' not in {h['name'] for h in
                        agent_api.list_hosts(context.get_admin_context())}
