"""Errors as the API answers them."""

from common import exception
from api import faults


def test_database_unavailable_is_a_503_that_names_no_server():
    err = exception.DBUnavailable(
        attempts=5, seconds=0.84,
        reason='connection to server at "10.0.0.7", port 5432 failed')
    code, answer = faults.from_exception(err)
    assert code == 503
    assert answer == {'serviceUnavailable': {'code': 503, 'message': (
        'The database is unavailable (5 attempts over 0.8 s); try again '
        'later.')}}


def test_database_unavailable_without_its_figures():
    code, answer = faults.from_exception(exception.DBUnavailable('gone'))
    assert (code, answer['serviceUnavailable']['message']) == (503, (
        'The database is unavailable; try again later.'))
