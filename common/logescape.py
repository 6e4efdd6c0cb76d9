"""Control characters in log lines, escaped: what a caller chose (a path,
a name, a token's user name, a header) cannot start a forged line (CR, LF,
U+2028), hide one (ESC sequences, CR), cut one short (NUL), or make a log
handler fail (a lone surrogate cannot be written as UTF-8).

:func:`install` wraps the logging module's record factory so that every
argument of every record (the values ``LOG.info('%s', value)`` interpolates)
is escaped when its text holds such a character; a message's own format
string, written in this code, is left as it is, line breaks included, and
so are tracebacks. The request context's log values (user and project
names, ids) are escaped by :meth:`common.context.RequestContext.
get_logging_values`. Every daemon installs it with its log defaults
(:func:`common.context.set_log_defaults`).
"""

import collections.abc
import logging
import re

_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]')
_PLAIN = (int, float, type(None))


def _code(match):
    point = ord(match.group())
    return '\\x%02x' % point if point < 0x100 else '\\u%04x' % point


def escape(text):
    """``text`` with every control character as ``\\xNN`` (or ``\\uNNNN``)."""
    return _CONTROL.sub(_code, text)


def safe(value):
    """``value``, or its text escaped when that holds a control character."""
    if isinstance(value, _PLAIN):
        return value
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:           # its own formatting will fail the same way
        return value
    return escape(text) if _CONTROL.search(text) else value


def escape_record(record):
    """Escape the arguments of one :class:`logging.LogRecord` in place."""
    if isinstance(record.args, tuple):
        record.args = tuple(safe(arg) for arg in record.args)
    elif isinstance(record.args, collections.abc.Mapping):
        record.args = {key: safe(arg) for key, arg in record.args.items()}
    if not isinstance(record.msg, str):
        record.msg = safe(record.msg)
    return record


def install():
    """Escape every record's arguments from now on (idempotent)."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, 'escapes_control_characters', False):
        return

    def factory(*args, **kwargs):
        return escape_record(previous(*args, **kwargs))
    factory.escapes_control_characters = True
    logging.setLogRecordFactory(factory)
