"""An unexpected error answered the conductor's traceback to the user.

A member's ``POST /leases`` with a date that overflowed got a 500 whose
message was the conductor's whole Python traceback (paths, module names,
source lines): oslo.messaging re-raises a builtin exception from the
conductor with the remote traceback in its message, and the API put the
message in its answer. An exception of another module (a database
driver's) came back as a ``RemoteError``, which the API took for a dead bus:
a 503 "the message bus is unavailable" with the traceback in it. Found by
trying the API as an attacker would (issue 20, item 9). Fixed: an
unexpected error, a ``RemoteError`` included, answers a generic 500 with
the request id (api/faults.py); the traceback, the remote one included,
goes to the API's log only.
"""

import logging

import pytest

from conductor.leases import requests as lease_requests
from tests.functional import api_support
from tests.functional.api_support import message

SECRET = 'secret-detail-of-the-conductor'


@pytest.fixture(scope='module')
def api(shared_plane):
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.new_project())


def _generic_500(api, monkeypatch, caplog, fail, name):
    """``POST /leases`` while the conductor's parsing runs ``fail``: its
    answer, checked to be a 500 whose message names its request id and
    neither the secret, a traceback nor the exception's ``name``."""
    monkeypatch.setattr(lease_requests, 'parse_create', fail)
    with caplog.at_level(logging.ERROR, logger='api.faults'):
        resp = api.post('/leases', json={
            'name': 'x', 'start_date': 'now', 'end_date': '2999-01-01 00:00',
            'reservations': [{'resource_type': 'physical:host', 'min': 1,
                              'max': 1}]})
    assert resp.status_code == 500, resp.get_json()
    text = message(resp)
    assert resp.headers['X-OpenStack-Request-ID'] in text
    for leaked in (SECRET, 'Traceback', '.py', name):
        assert leaked not in text
    return resp


def _fail(*args, **kwargs):
    raise OverflowError(SECRET)


def test_an_unexpected_conductor_error_is_a_generic_500(api, monkeypatch,
                                                        caplog):
    resp = _generic_500(api, monkeypatch, caplog, _fail, 'OverflowError')
    request_id = resp.headers['X-OpenStack-Request-ID']
    (record,) = [r for r in caplog.records if r.name == 'api.faults']
    assert request_id in record.getMessage()
    logged = caplog.text
    assert SECRET in logged and 'Traceback' in logged
    assert 'conductor/leases' in logged      # the remote traceback too


class DriverError(Exception):
    """An exception of a module oslo.messaging does not re-raise as itself
    (a database driver's, say): the API gets a ``RemoteError``."""


def _fail_remote(*args, **kwargs):
    raise DriverError(SECRET)


def test_a_remote_error_is_a_generic_500_not_a_dead_bus(api, monkeypatch,
                                                        caplog):
    _generic_500(api, monkeypatch, caplog, _fail_remote, 'DriverError')
    assert SECRET in caplog.text and 'Traceback' in caplog.text
