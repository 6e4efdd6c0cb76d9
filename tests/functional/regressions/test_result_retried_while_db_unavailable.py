"""A task's result was dropped when the conductor's database did not answer.

The agent sends a result until a conductor records it, but it took every
error the conductor answered with for a refusal, including
:class:`~common.exception.DBUnavailable` (the database down for longer than
the conductor's bounded retries): it gave up, and the task stayed in its
task_state until the reaper failed it, up to an hour later, although it had
succeeded. Found by the fault-injection suite. Fixed: the agent sends the
result again when the conductor answers that its database is unavailable,
as it does when the conductor does not answer; and a progress report
answered so is advisory, as one not delivered is (it failed the task
without rollback: ERROR).
"""

from common import exception
from common import states
from common.states import vm
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import log_of


def test_a_result_is_sent_again_until_the_database_answers(plane, ctx,
                                                           monkeypatch):
    inst = active(plane, ctx)
    results = plane.conductor.results
    record = results.finished
    refused = []

    def database_down_twice(*args, **kwargs):
        if len(refused) < 2:
            refused.append(kwargs['instance_uuid'])
            raise exception.DBUnavailable(attempts=5, seconds=1.5,
                                          reason='connection refused')
        return record(*args, **kwargs)
    monkeypatch.setattr(results, 'finished', database_down_twice)

    stopped = act(plane, ctx, inst['uuid'], 'stop')

    assert refused == [inst['uuid'], inst['uuid']]
    assert stopped['vm_state'] == vm.STOPPED
    assert [(e['action'], e['result']) for e in log_of(plane, inst['uuid'])] == [
        ('build', states.RESULT_SUCCESS), ('stop', states.RESULT_SUCCESS)]


def test_progress_not_recorded_does_not_fail_the_task(plane, ctx,
                                                     monkeypatch):
    inst = active(plane, ctx)
    refused = []

    def database_down(*args, **kwargs):
        refused.append(kwargs.get('step'))
        raise exception.DBUnavailable(attempts=5, seconds=1.5,
                                      reason='connection refused')
    monkeypatch.setattr(plane.conductor.results, 'progress', database_down)

    resized = act(plane, ctx, inst['uuid'], 'resize', flavor='small')

    assert refused, 'no progress report met the unavailable database'

    assert (resized['vm_state'], resized['flavor_name']) == (vm.RESIZED,
                                                             'small')
    assert log_of(plane, inst['uuid'])[-1]['result'] == states.RESULT_SUCCESS
