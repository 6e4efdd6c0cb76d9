"""common/logescape.py: control characters in log records, escaped."""

import logging

import pytest

from common import logescape


@pytest.mark.parametrize('text, shown', [
    ('a\nb', 'a\\x0ab'), ('\r\x00\x1b[2K', '\\x0d\\x00\\x1b[2K'),
    ('\x7f\x85\x9f', '\\x7f\\x85\\x9f'), ('\u2028\u2029', '\\u2028\\u2029'),
    ('\ud800', '\\ud800'), ('caf\u00e9 \U0001f600 \\n', 'caf\u00e9 \U0001f600 \\n'),
])
def test_escape(text, shown):
    assert logescape.escape(text) == shown


def test_safe_keeps_values_without_control_characters_as_they_are():
    value = {'a': 1}
    assert logescape.safe(value) is value
    assert logescape.safe(3) == 3 and logescape.safe(None) is None
    assert logescape.safe(ValueError('x\ny')) == 'x\\x0ay'


def _record(msg, *args):
    return logging.LogRecord('t', logging.INFO, __file__, 1, msg, args, None)


def test_a_record_s_arguments_are_escaped_not_its_format():
    record = logescape.escape_record(_record('line one\n%s %d', 'a\rb', 5))
    assert record.getMessage() == 'line one\na\\x0db 5'
    mapping = logescape.escape_record(_record('%(p)s', {'p': '\x1b'}))
    assert mapping.getMessage() == '\\x1b'


@pytest.fixture
def factory():
    previous = logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(previous)


def test_install_wraps_the_record_factory_once(factory, caplog):
    logescape.install()
    installed = logging.getLogRecordFactory()
    logescape.install()
    assert logging.getLogRecordFactory() is installed
    with caplog.at_level(logging.INFO):
        logging.getLogger('t').info('GET %s', '/x\nforged')
    assert caplog.messages == ['GET /x\\x0aforged']
