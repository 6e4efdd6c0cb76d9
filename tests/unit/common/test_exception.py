"""Errors say why, and survive the RPC bus as the same class."""

import json

import pytest

from common import exception

UUID = '6f1c2d34-0000-4000-8000-000000000001'


def _denied(**kw):
    return exception.ActionNotAllowed(
        action='start', instance=UUID, vm_state='active',
        allowed={'stopped'}, **kw)


def test_action_not_allowed_names_everything():
    message = str(_denied(task_state='rebooting', task_id='task-9'))
    for part in ('start', UUID, 'active', 'rebooting', 'task-9', 'stopped'):
        assert part in message


def test_action_not_allowed_without_a_task():
    message = str(_denied())
    assert 'is running' not in message
    assert 'stopped' in message and 'active' in message


@pytest.mark.parametrize('err', [
    _denied(task_state='rebooting', task_id='task-9'),
    _denied(),
    exception.InstanceNotFound(instance=UUID),
    exception.TaskPreempted(task_id='t', instance=UUID, reason='hard-deleted'),
    exception.DBUnavailable(attempts=3, seconds=0.5, reason='locked'),
    exception.InvalidState(field='target', value='x', expected='active, error'),
], ids=lambda e: type(e).__name__)
def test_round_trip_rebuilds_class_and_message(err):
    data = json.loads(json.dumps(err.to_dict()))
    back = exception.from_dict(data)
    assert type(back) is type(err)
    assert str(back) == str(err)
    assert back.code == err.code


def test_unknown_class_comes_back_as_base_error():
    back = exception.from_dict({'class': 'NoSuchError', 'message': 'boom'})
    assert type(back) is exception.TristateError
    assert str(back) == 'boom'


@pytest.mark.parametrize('cls,code', [
    (exception.Invalid, 400), (exception.InvalidState, 400),
    (exception.Forbidden, 403), (exception.NotFound, 404),
    (exception.InstanceNotFound, 404), (exception.HostNotFound, 404),
    (exception.ActionNotFound, 404), (exception.Conflict, 409),
    (exception.ActionNotAllowed, 409), (exception.TaskPreempted, 409),
    (exception.HostCapacityExceeded, 409), (exception.NoValidHost, 409),
    (exception.DBUnavailable, 503), (exception.ServiceUnavailable, 503),
])
def test_codes(cls, code):
    assert cls.code == code
    assert issubclass(cls, exception.TristateError)


def test_bad_template_arguments_still_give_a_message():
    err = exception.InstanceNotFound(wrong='x')
    assert 'wrong' in str(err)
