"""Regular expressions that users send in list filters (``GET
/servers?name=``), matched in linear time.

Nova treats ``name`` as a regular expression searched in each server's name,
so the filter keeps that meaning. Python's ``re`` backtracks: a pattern such
as ``^(a+)+$`` against a name of 27 ``a`` and a ``!`` takes seconds, holding
the interpreter lock, so one request stalled every other one in the process.
RE2 (Google's engine, the ``google-re2`` binding) matches in time linear in
the text and refuses what it cannot match that way (back-references,
look-around): such a pattern is a 400 naming the field.
"""

import re2

from common import exception

# The compiled program is bounded, so a pattern's cost is too (RE2 refuses a
# pattern whose program would not fit).
MAX_PROGRAM_BYTES = 1 << 20


def _options():
    options = re2.Options()
    options.max_mem = MAX_PROGRAM_BYTES
    options.log_errors = False      # the 400 says why; nothing on stderr
    return options


def _why(err):
    reason = err.args[0] if err.args else err
    if isinstance(reason, bytes):
        reason = reason.decode('utf-8', 'replace')
    return str(reason)


def compile_filter(field, pattern):
    """A compiled ``pattern`` (its ``search(text)`` as ``re``'s), or
    :class:`common.exception.Invalid` naming ``field``."""
    try:
        return re2.compile(pattern, options=_options())
    except re2.error as err:
        reason = _why(err)
    except (TypeError, ValueError, UnicodeError) as err:
        reason = str(err)
    raise exception.Invalid(
        reason='%s must be a regular expression RE2 can match (no '
               'back-references or look-around), not %r: %s'
               % (field, pattern, reason))
