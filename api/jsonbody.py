"""A request's JSON body, decoded strictly and checked in one place.

Before any schema sees a body (:mod:`api.schemas`), it must be UTF-8 JSON
whose every string (keys too) is valid Unicode text with no NUL (PostgreSQL
cannot store one, and no field of this API means one), whose integers have
at most :data:`MAX_DIGITS` digits (Python refuses to convert more than 4,300,
and no field wants more than a few), with no ``NaN`` or ``Infinity`` (not
JSON), nested at most :data:`MAX_DEPTH` containers deep (Python's parser and
the schema checker recurse). Anything else is a 400 naming the field, in the
schemas' message shape, before anything is asked of the conductor.

Bodies too deep for Python's parser (a ``RecursionError``) are scanned once
more, linearly, only to name where they went too deep. :func:`check_path`
does the same for the parameters of a request's path (an id with a control
character is a 400), before any route runs.
"""

import json
import re

from common import exception
from common import logescape

MAX_DEPTH = 32
MAX_DIGITS = 100


class _Refused:
    """What the parser put in place of a number it must not convert."""

    def __init__(self, text, why):
        self.text = text
        self.why = why


def _parse_int(text):
    if len(text.lstrip('-')) > MAX_DIGITS:
        return _Refused('%s...(%d digits)' % (text[:20], len(text)),
                        'An integer of at most %d digits is expected'
                        % MAX_DIGITS)
    return int(text)


def _parse_constant(text):
    return _Refused(text, '%s is not a JSON number' % text)


def invalid(path, value, why):
    """The 400 of a bad field, in :func:`api.schemas.validate`'s shape."""
    field = logescape.escape('.'.join(str(p) for p in path)) or 'body'
    return exception.Invalid('Invalid input for field/attribute %s. Value: '
                             '%s. %s' % (field, short(value), why))


def short(value, limit=200):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + '...'


def loads(data):
    """The body of ``data`` (bytes), or :class:`~common.exception.Invalid`."""
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as err:
        raise exception.Invalid('Malformed request body: it is not UTF-8 '
                                'text (%s)' % err.reason) from None
    try:
        body = json.loads(text, parse_int=_parse_int,
                          parse_constant=_parse_constant)
    except RecursionError:
        raise too_deep(_deep_path(text), '[...]') from None
    except ValueError as err:
        raise exception.Invalid('Malformed request body: it is not JSON: %s'
                                % err) from None
    check(body)
    return body


def too_deep(path, value):
    return invalid(path, _Shown(value), 'It is nested more than %d levels deep'
                   % MAX_DEPTH)


def text_problem(text):
    """Why ``text`` is not acceptable in any field, or None."""
    if '\x00' in text:
        return 'Text must not contain NUL (U+0000)'
    try:
        text.encode('utf-8')
    except UnicodeEncodeError as err:
        return ('It must be valid Unicode text: a lone surrogate U+%04X at '
                'index %d' % (ord(text[err.start]), err.start))
    return None


def check(body):
    """Raise :class:`~common.exception.Invalid` for the first value of a
    parsed body that breaks a rule of the module docstring (iterative: the
    body's depth is not trusted yet)."""
    pending = [((), body, 1)]
    while pending:
        path, value, depth = pending.pop()
        if isinstance(value, (dict, list)) and depth > MAX_DEPTH:
            raise too_deep(path, '[...]' if isinstance(value, list) else
                           '{...}')
        if isinstance(value, dict):
            for key, item in value.items():
                _check_text(path + (key,), key)
                pending.append((path + (key,), item, depth + 1))
        elif isinstance(value, list):
            pending.extend((path + (i,), item, depth + 1)
                           for i, item in enumerate(value))
        elif isinstance(value, str):
            _check_text(path, value)
        elif isinstance(value, _Refused):
            raise invalid(path, _Shown(value.text), value.why)


class _Shown(str):
    """A value shown as it was written (not repr'd) in a message."""

    def __repr__(self):
        return str(self)


def check_path(values):
    """Refuse a path parameter (a server's or a lease's id, a project id)
    holding a control character: no id has one, and PostgreSQL refuses a
    query with a NUL in it."""
    for name, value in (values or {}).items():
        if isinstance(value, str) and (text_problem(value) or any(
                ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in value)):
            raise exception.Invalid(
                'Invalid input for path parameter %s. Value: %s. It must be '
                'printable text: no control characters' % (name, short(value)))


def _check_text(path, text):
    why = text_problem(text)
    if why:
        raise invalid(path, text, why)


# A JSON string, or one of the characters that open, close or separate.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)


def _deep_path(text):
    """The path to the first container nested deeper than MAX_DEPTH, read
    from the raw text (for a body Python's parser could not read)."""
    path, kinds, last = [], [], ''
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in ('{', '['):
            if len(kinds) >= MAX_DEPTH:
                return path
            kinds.append(token)
            path.append(0 if token == '[' else '')
        elif token in ('}', ']'):
            if kinds:
                kinds.pop()
                path.pop()
        elif token == ',':
            if kinds and kinds[-1] == '[':
                path[-1] += 1
        elif token == ':':
            if kinds:
                path[-1] = last[1:-1]
        else:
            last = token
    return path
