"""A result that could never be delivered held its task until the reaper.

``rebuild`` with ``imageRef "\\ud800"`` (a lone surrogate: not valid
Unicode) was accepted; the agent rebuilt, then sent its result, which the
conductor could not store ("'utf-8' codec can't encode character"), and
the agent took that for a conductor that was down: it sent the result
again, forever. The instance sat in REBUILDING until the 30-minute reaper,
which then left the old image in the database while the domain had the
new one. Found by an adversarial client trying the embedded plane (issue
19, item 3). Fixed on the agent: a failure that says the message itself
is bad (it cannot be encoded, or the conductor fails on reading or storing
it) is not sent again; the task is reported failed at once, without
rollback (the rebuild ran), with the reason in a form that can be sent.
The bus or the conductor's database being down is still retried
(test_result_retried_while_db_unavailable).

The API now refuses such text with a 400 (issue 20); this test drives the
agent directly, through the compute RPC API, as any client of the
conductor's RPC API still could.
"""

import logging

from common import exception
from common import states
from common.states import vm
from compute_agent import manager as agent_manager
from tests.functional.conftest import active
from tests.functional.conftest import last_log
from tests.functional.conftest import wait_idle

BAD_TEXT = '\ud800'


def _rebuild_with(plane, ctx, inst, image_ref):
    conductor = plane.conductor
    claimed, task_ctx = conductor.gateway.claim(ctx, inst['uuid'], 'rebuild')
    conductor.flows.send(task_ctx, claimed['host'], claimed, 'rebuild',
                         {'image_ref': image_ref})
    return task_ctx.task_id


def test_a_result_that_cannot_be_encoded_fails_the_task_at_once(
        plane, ctx, caplog):
    caplog.set_level(logging.WARNING, logger=agent_manager.__name__)
    inst = active(plane, ctx)

    task_id = _rebuild_with(plane, ctx, inst, BAD_TEXT)

    after = wait_idle(plane, inst['uuid'], timeout=10)
    assert after['vm_state'] == vm.ERROR    # the domain changed: no rollback
    entry = last_log(plane, inst['uuid'], 'rebuild')
    assert entry['task_id'] == task_id
    assert entry['result'] == states.RESULT_ERROR
    assert agent_manager.UNDELIVERED in entry['message']
    assert "can't encode" in entry['message']
    entry['message'].encode('utf-8')        # the reason itself can be sent
    retried = [r for r in caplog.records if 'retrying' in r.getMessage()
               and task_id in r.getMessage()]
    assert retried == []


def test_a_result_the_conductor_cannot_store_fails_the_task(plane, ctx,
                                                             monkeypatch):
    """Encodable here, refused there: the conductor fails on the message
    (its database cannot store it) rather than on being down."""
    inst = active(plane, ctx)
    results = plane.conductor.results
    record = results.finished

    def cannot_store(*args, **kwargs):
        if kwargs.get('values'):
            raise UnicodeEncodeError('utf-8', BAD_TEXT, 0, 1,
                                     'surrogates not allowed')
        return record(*args, **kwargs)
    monkeypatch.setattr(results, 'finished', cannot_store)

    _rebuild_with(plane, ctx, inst, 'cirros-2')

    after = wait_idle(plane, inst['uuid'], timeout=10)
    assert after['vm_state'] == vm.ERROR
    assert "can't encode" in last_log(plane, inst['uuid'], 'rebuild')['message']


def test_a_conductor_unavailable_is_still_retried(plane, ctx, monkeypatch):
    inst = active(plane, ctx)
    results = plane.conductor.results
    record = results.finished
    refused = []

    def down_once(*args, **kwargs):
        if not refused:
            refused.append(1)
            raise exception.DBUnavailable(attempts=1, seconds=0.1,
                                          reason='connection refused')
        return record(*args, **kwargs)
    monkeypatch.setattr(results, 'finished', down_once)

    _rebuild_with(plane, ctx, inst, 'cirros-2')

    after = wait_idle(plane, inst['uuid'])
    assert refused and (after['vm_state'], after['image_ref']) == (
        vm.ACTIVE, 'cirros-2')
