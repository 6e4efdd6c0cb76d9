"""A request could write log lines of its caller's choosing.

``GET /v2.1/servers/x%0a<forged line>`` wrote the API's access line with a
line break in it, so the forged text (say, an admin's DELETE answered 204)
stood on a line of its own; ``%00`` was written raw; a lease name with
``ESC[2K\\r`` reached the conductor's log raw (erasing the line on a
terminal). Found by trying the API as an attacker would (issue 20, item
10). Fixed: every daemon's log defaults (common.context.set_log_defaults)
install common/logescape.py, which escapes control characters in every
argument of every log record, and the request context escapes the values
it gives to log lines (a noauth token's user name).
"""

import logging

import pytest

from common import context as tcontext
from tests.functional import api_support

FORGED = '2026-11-26 admin DELETE /v2.1/servers/all status: 204'


@pytest.fixture(scope='module')
def api(shared_plane):
    """An API client, with the log defaults every daemon sets (restored
    after the module: other tests' logs stay as they were)."""
    previous = logging.getLogRecordFactory()
    tcontext.set_log_defaults()
    yield api_support.Api(api_support.make_app(shared_plane),
                          token=api_support.new_project())
    logging.setLogRecordFactory(previous)


def _raw_lines(caplog):
    return [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize('injected, shown', [
    ('%0a' + FORGED, '\\x0a' + FORGED), ('%0d%0a', '\\x0d\\x0a'),
    ('%00', '\\x00'), ('%1b%5b2K%0d', '\\x1b[2K\\x0d'),
    ('%e2%80%a8', '\\u2028')])
def test_a_path_cannot_break_or_hide_a_log_line(api, caplog, injected,
                                                shown):
    with caplog.at_level(logging.INFO):
        api.get('/servers/x' + injected)
    lines = _raw_lines(caplog)
    assert any(shown in line for line in lines), lines
    for line in lines:
        assert not set(line) & {'\n', '\r', '\x00', '\x1b', '\u2028'}, line


def test_a_lease_name_reaches_no_log_raw(api, caplog):
    name = 'night\x1b[2K\rforged'
    with caplog.at_level(logging.DEBUG):
        api.post('/leases', json={
            'name': name, 'start_date': 'now',
            'end_date': '2999-01-01 00:00',
            'reservations': [{'resource_type': 'physical:host', 'min': 1,
                              'max': 1}]})
        logging.getLogger('conductor.leases').info('lease %s', name)
    for line in _raw_lines(caplog):
        assert '\x1b' not in line and '\r' not in line, line
    assert 'lease night\\x1b[2K\\x0dforged' in _raw_lines(caplog)


def test_the_context_escapes_what_a_caller_chose():
    ctx = tcontext.RequestContext(user_id='eve\nadmin', project_id='p\x1b',
                                  user_name='eve\r\nadmin')
    values = ctx.get_logging_values()
    assert values['user_name'] == 'eve\\x0d\\x0aadmin'
    assert values['user'] == 'eve\\x0aadmin'
    assert values['project_id'] == 'p\\x1b'
    assert '\n' not in values['user_identity']
