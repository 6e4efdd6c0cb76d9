"""JSON schemas of every request body, and the check that names the field.

A body that does not match is answered ``400`` with Nova's message shape,
``Invalid input for field/attribute server.flavorRef. Value: ...``, before
anything is asked of the conductor: a rejected request changes nothing.
Properties of Nova's that Tristate does not act on yet (networks,
key_name, ...) pass the schema and are refused by the route, naming the
issue that builds them; anything else is refused here.

Bodies reach the schemas decoded and checked by :mod:`api.jsonbody` (valid
Unicode, no NUL, bounded depth and digits). Here, names, references, dates
and hosts are one line of printable text (the ``printable`` format), and an
integer a field takes as a string as well (``"rotation": "2"``, as Nova)
obeys the field's ``minimum`` and ``maximum`` in both forms.
"""

import functools
import ipaddress
import math
import re
import unicodedata
import uuid as uuidlib

import jsonschema

from api import jsonbody
from api import patterns
from common import exception
from common import states

# Text of one line, as a name, a reference, a date or a host must be: no
# control characters (C0, DEL, C1) and no line or paragraph separators.
# Free text (a password) may hold them; NUL and lone surrogates are refused
# in every string before any schema is checked (api/jsonbody.py).
PRINTABLE = 'printable'
FORMATS = jsonschema.FormatChecker(formats=())
_LINE_BREAKING = frozenset({'Cc', 'Zl', 'Zp'})


@FORMATS.checks(PRINTABLE)
def _printable(value):
    return not isinstance(value, str) or not any(
        unicodedata.category(c) in _LINE_BREAKING for c in value)


@FORMATS.checks('ipv4', raises=ValueError)
def _ipv4(value):
    return not isinstance(value, str) or bool(ipaddress.IPv4Address(value))


@FORMATS.checks('ipv6', raises=ValueError)
def _ipv6(value):
    return not isinstance(value, str) or bool(ipaddress.IPv6Address(value))


NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
        'pattern': r'^\S(.*\S)?$', 'format': PRINTABLE}
REF = {'type': ['string', 'integer'], 'minLength': 1, 'maxLength': 255,
       'format': PRINTABLE}
IMAGE_REF = {'type': 'string', 'minLength': 1, 'maxLength': 255,
             'format': PRINTABLE}
TEXT = {'type': 'string', 'maxLength': 255, 'format': PRINTABLE}
NO_BODY = {'type': ['null', 'object'], 'properties': {},
           'additionalProperties': False}
ANYTHING = {}

POLICY_METADATA = {
    'tristate:user_shutdown': {'enum': list(states.USER_SHUTDOWN_POLICIES)},
    'tristate:crash': {'enum': list(states.CRASH_POLICIES)},
}
# Nova's user metadata: keys of 1-255 letters, digits and ``-_:. ``, values
# strings of at most 255 characters; the two ``tristate:`` keys (which
# match that pattern) take their policies' values only.
METADATA_KEY = '^[a-zA-Z0-9-_:. ]{1,255}$'
METADATA_VALUE = {'type': 'string', 'maxLength': 255}
METADATA = {'type': 'object', 'properties': POLICY_METADATA,
            'patternProperties': {METADATA_KEY: METADATA_VALUE},
            'additionalProperties': False}
# Nova's server tag (2.26): 1-60 characters, no comma and no slash.
TAG = {'type': 'string', 'minLength': 1, 'maxLength': 60,
       'pattern': '^[^,/]*$', 'format': PRINTABLE}
TAGS = {'type': 'array', 'items': TAG, 'maxItems': 50}
DESCRIPTION = {'type': ['string', 'null'], 'maxLength': 255,
               'format': PRINTABLE}


def _object(required=(), **properties):
    return {'type': 'object', 'properties': properties,
            'required': list(required), 'additionalProperties': False}


# Nova's fields of POST /servers checked by the route: networks and
# security_groups by api/routes/networks.py; key_name, user_data and
# config_drive by api/guest.py; hostname (its schema depends on the
# microversion) and OS-DCF:diskConfig by api/diskhost.py.
_IGNORED_CREATE = ('networks', 'security_groups', 'key_name',
                   'user_data', 'config_drive',
                   'OS-DCF:diskConfig', 'hostname')
# Nova's admin password (create, rebuild): api/guest.py's admin_password.
ADMIN_PASS = {'type': 'string'}
# Nova's accessIPv4/accessIPv6: addresses the user keeps on the server
# (create, update, rebuild), shown back in its views; nothing acts on them.
ACCESS_IPS = {'accessIPv4': {'type': 'string', 'format': 'ipv4'},
              'accessIPv6': {'type': 'string', 'format': 'ipv6'}}


def access_ips(body):
    """The columns of a validated body's accessIPv4/accessIPv6, each
    address written as Nova shows it (``::babe:202:202``)."""
    return {column: str(ipaddress.ip_address(body[key]))
            for key, column in (('accessIPv4', 'access_ip_v4'),
                                ('accessIPv6', 'access_ip_v6'))
            if key in body}

# A lease's reservation to build on (``reservation`` is Blazar's name),
# the server group to join (Nova's ``group``, a uuid) and Nova's
# ``same_host`` / ``different_host`` (a server's uuid, or a list of them:
# common/db/host_hints.py); other hints are refused (nothing acts on
# them): see reservation_hint.
RESERVATION_ID = {'type': 'string', 'minLength': 1, 'maxLength': 36,
                  'format': PRINTABLE}
UUID = {'type': 'string', 'pattern': '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?'
        '[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$'}
# Nova's schema for both; its ``same_host`` as one string is not checked
# to be a uuid there (the build then fails, no host holding it): here it
# is, as a 400 before anything is made.
SERVER_UUIDS = {'oneOf': [UUID, {'type': 'array', 'items': UUID}],
                'description': 'a server uuid or a list of server uuids'}
HOST_HINTS = ('same_host', 'different_host')
SCHEDULER_HINTS = {'type': 'object',
                   'properties': {'reservation_id': RESERVATION_ID,
                                  'reservation': RESERVATION_ID,
                                  'group': UUID,
                                  'same_host': SERVER_UUIDS,
                                  'different_host': SERVER_UUIDS}}


HINT_KEYS = ('os:scheduler_hints', 'OS-SCH-HNT:scheduler_hints')


def _hints(body):
    return (body.get('os:scheduler_hints')
            or body.get('OS-SCH-HNT:scheduler_hints') or {})


def _hints_once(body):
    """A 400 when both of Nova's keys carry hints that differ: Nova acts
    on the first only, so the second's would be accepted and ignored."""
    first, second = (body.get(where) for where in HINT_KEYS)
    if first and second and first != second:
        raise exception.Invalid(
            'Invalid input for field/attribute %s. Value: %s. Expected the '
            'hints of %s, or none: the scheduler hints are given under '
            'both keys, and differ' % (HINT_KEYS[1], _short(second),
                                       HINT_KEYS[0]))


def reservation_hint(body):
    """The reservation a validated POST /servers body asks for, or None;
    a 400 naming any scheduler hint but these, ``group``
    (api/routes/server_groups.py: group_hint) and the host hints
    (:func:`host_hints`) (``query``, ``build_near_host_ip``, ...: the
    scheduler acts on none of them), and hints under both keys that
    differ (:func:`_hints_once`)."""
    for where in HINT_KEYS:
        for hint in sorted(body.get(where) or {}):
            if hint not in SCHEDULER_HINTS['properties']:
                raise exception.Invalid(
                    'Invalid input for field/attribute %s.%s. Value: %s. '
                    'Not supported: Tristate\'s scheduler acts on the '
                    'reservation, group, same_host and different_host '
                    'hints only' % (where, hint, _short(body[where][hint])))
    _hints_once(body)
    hints = _hints(body)
    return hints.get('reservation_id') or hints.get('reservation')


def host_hints(body):
    """A validated POST /servers body's ``same_host`` and
    ``different_host``, each a list of server uuids in their canonical
    form (lower case, hyphens), duplicates dropped (Nova keeps every hint
    a list, as 2.100 shows it); None when neither is given, or both are
    empty lists (which Nova's filters ignore)."""
    hints = _hints(body)
    found = {}
    for hint in HOST_HINTS:
        value = hints.get(hint)
        if value is None:
            continue
        values = [value] if isinstance(value, str) else value
        uuids = list(dict.fromkeys(str(uuidlib.UUID(v)) for v in values))
        if uuids:
            found[hint] = uuids
    return found or None


# openstackclient's ``server create --image`` sends the image twice: as
# ``imageRef`` and as the root disk's mapping (Nova's default: the image
# on the host's local disk, deleted with the server). That one mapping is
# what Tristate does anyway, so it is accepted; the route
# (api/routes/servers.py) refuses any other mapping (volumes, blank, swap,
# ephemeral disks) as not supported.
IMAGE_ROOT_DISK = {'type': 'array', 'items': {'type': 'object'}}

# Nova's boolean parameter (parameter_types.boolean).
BOOLEAN = {'enum': [True, False] + [
    w for word in ('true', 'false', 'on', 'off', 'yes', 'no')
    for w in (word, word.upper(), word.capitalize())] + ['1', '0']}

# Nova's min_count/max_count: an integer of at least 1, or its digits.
# Nova bounds them by quota only; Tristate also by 100 per request (each
# server is created before the request answers).
COUNT = {'type': ['integer', 'string'], 'pattern': '^[0-9]+$',
         'minimum': 1, 'maximum': 100, 'maxLength': 3}

CREATE_SERVER = _object(
    ['server'],
    server=_object(
        ['name', 'flavorRef', 'imageRef'],
        name=NAME, flavorRef=REF, imageRef=IMAGE_REF, metadata=METADATA,
        description=DESCRIPTION, tags=TAGS,
        min_count=COUNT, max_count=COUNT,
        return_reservation_id=BOOLEAN,
        block_device_mapping_v2=IMAGE_ROOT_DISK, availability_zone=NAME,
        adminPass=ADMIN_PASS, **dict.fromkeys(_IGNORED_CREATE, ANYTHING), **ACCESS_IPS),
    **{'os:scheduler_hints': SCHEDULER_HINTS,
       'OS-SCH-HNT:scheduler_hints': SCHEDULER_HINTS})

# PUT /servers/{id}: the name, (from 2.19, the route checks) the
# description, the access addresses, and (api/diskhost.py checks them) the
# disk config and (from 2.90) the hostname.
UPDATE_SERVER = _object(
    ['server'],
    server=_object(name=NAME, description=DESCRIPTION, hostname=ANYTHING,
                   **{'OS-DCF:diskConfig': ANYTHING}, **ACCESS_IPS))

REBOOT = _object(['type'], type={'enum': ['SOFT', 'Soft', 'soft', 'HARD',
                                          'Hard', 'hard']})
# Nova's rebuild (``description`` from 2.19: the route checks the
# microversion). ``adminPass``: api/guest.py's admin_password. ``key_name``
# (2.54) and ``user_data`` (2.57) are checked by the route (api/guest.py).
# There is no ephemeral disk to preserve or not, so ``preserve_ephemeral``
# is true to either way.
REBUILD = _object(['imageRef'], imageRef=IMAGE_REF, name=NAME,
                  metadata=METADATA, description=DESCRIPTION,
                  adminPass=ADMIN_PASS,
                  key_name=ANYTHING, user_data=ANYTHING,
                  preserve_ephemeral={'type': 'boolean'},
                  hostname=ANYTHING, **{'OS-DCF:diskConfig': ANYTHING},
                  **ACCESS_IPS)
# lock: ``locked_reason`` from 2.73 (the route checks the microversion).
LOCK = {'type': ['null', 'object'],
        'properties': {'locked_reason': {'type': 'string', 'maxLength': 255,
                                         'format': PRINTABLE}},
        'additionalProperties': False}
# os-getConsoleOutput: lines from the end of the log, -1 (or none) all.
CONSOLE_OUTPUT = {'type': ['null', 'object'],
                  'properties': {'length': {
                      'type': ['integer', 'string', 'null'],
                      'pattern': '^-?[0-9]+$', 'minimum': -1,
                      'maximum': 2 ** 31 - 1, 'maxLength': 20}},
                  'additionalProperties': False}
# Nova 2.1's serial and VNC console actions: the type, from Nova's list.
SERIAL_CONSOLE = _object(['type'], type={'enum': ['serial']})
VNC_CONSOLE = _object(['type'], type={'enum': ['novnc', 'xvpvnc']})
# Nova's addSecurityGroup / removeSecurityGroup: the group's name (one
# line of printable text, as Neutron's names).
SECURITY_GROUP_ACTION = _object(['name'], name={
    'type': 'string', 'minLength': 1, 'maxLength': 255,
    'format': PRINTABLE})
RESCUE = {'type': ['null', 'object'],
          'properties': {'adminPass': {'type': 'string'},
                         'rescue_image_ref': IMAGE_REF},
          'additionalProperties': False}
RESIZE = _object(['flavorRef'], flavorRef=REF,
                 **{'OS-DCF:diskConfig': ANYTHING})
# Nova's: keys of letters, digits and ``-_:. ``, values strings; they
# become properties of the snapshot's image.
IMAGE_METADATA = {'type': 'object', 'additionalProperties': False,
                  'patternProperties': {'^[a-zA-Z0-9-_:. ]{1,255}$': {
                      'type': 'string', 'maxLength': 255}}}
CREATE_IMAGE = _object(['name'], name=NAME, metadata=IMAGE_METADATA)
# An integer as a string is at most INT_TEXT characters long (a zero-padded
# 5,000-digit one would pass the bounds and fail Python's int()).
INT_TEXT = 20
ROTATION = {'type': ['integer', 'string'], 'pattern': '^[0-9]+$',
            'minimum': 0, 'maximum': 2 ** 31 - 1, 'maxLength': INT_TEXT}
CREATE_BACKUP = _object(['name', 'backup_type', 'rotation'], name=NAME,
                        backup_type=TEXT, rotation=ROTATION,
                        metadata=IMAGE_METADATA)
CHANGE_PASSWORD = _object(['adminPass'], adminPass={'type': 'string'})
MIGRATE_LIVE = _object(
    ['host'], host={'type': ['string', 'null'], 'minLength': 1,
                    'maxLength': 255, 'format': PRINTABLE},
    block_migration={'enum': [True, False, 'auto', 'True', 'False',
                              'true', 'false']},
    disk_over_commit=ANYTHING, force=ANYTHING)
# Nova's ``migrate`` (2.56 on; before it Nova checks nothing and ignores a
# host: api/routes/server_actions.py drops it there).
MIGRATE = {'type': ['null', 'object'], 'additionalProperties': False,
           'properties': {'host': {
               'type': ['string', 'null'], 'minLength': 1, 'maxLength': 255,
               'format': PRINTABLE}}}
RESET_STATE = _object(['state'], state={'enum': ['active', 'error']})

UPDATE_METADATA = _object(['metadata'], metadata=METADATA)
REPLACE_TAGS = _object(['tags'], tags=TAGS)


def set_metadata_item():
    """PUT /servers/{id}/metadata/{key}: {"meta": {key: value}}, one
    item (the route checks that it is the URI's)."""
    return _object(['meta'], meta=dict(METADATA, minProperties=1,
                                       maxProperties=1))


# --- the check ------------------------------------------------------------------

def _path(error):
    parts = [str(p) for p in error.absolute_path]
    if error.validator == 'required':
        missing = [p for p in error.validator_value
                   if p not in (error.instance or {})]
        parts.append(missing[0] if missing else '')
    elif error.validator == 'additionalProperties':
        allowed = set(error.schema.get('properties', {}))
        extra = sorted(set(error.instance) - allowed)
        parts.append(extra[0] if extra else '')
    return '.'.join(parts) or 'body'


def _message(error):
    text = error.message
    if error.validator == 'format' and error.validator_value == PRINTABLE:
        text = ('It must be printable text: no control characters '
                '(U+0000-U+001F, U+007F-U+009F) or line separators')
    if error.validator == 'oneOf' and error.schema.get('description'):
        text += ': expected %s' % error.schema['description']
    if error.validator == 'additionalProperties':
        allowed = sorted(error.schema.get('properties', {}))
        text += '; allowed: %s' % (', '.join(allowed) or 'none')
    return text


# --- integers written as strings -------------------------------------------------
# Nova takes ``"rotation": "2"`` as well as ``2``; the string form must obey
# the same bounds. A string of more digits than any bound has is beyond it
# (and is never converted: Python refuses to convert 4,300 digits or more).

_INTEGER = re.compile(r'^-?[0-9]+$')
_DIGITS = 30


def _number(instance):
    """The number an integer field's value means, or None if it is not one."""
    if isinstance(instance, bool):
        return None
    if isinstance(instance, (int, float)):
        return instance
    if isinstance(instance, str) and _INTEGER.match(instance):
        sign = -1 if instance.startswith('-') else 1
        digits = instance.lstrip('-').lstrip('0') or '0'
        if len(digits) > _DIGITS:
            return sign * math.inf
        return sign * int(digits)
    return None


def _minimum(validator, minimum, instance, schema):
    number = _number(instance)
    if number is not None and number < minimum:
        yield jsonschema.ValidationError(
            '%s is less than the minimum of %r' % (_short(instance, 40),
                                                   minimum))


def _maximum(validator, maximum, instance, schema):
    number = _number(instance)
    if number is not None and number > maximum:
        yield jsonschema.ValidationError(
            '%s is greater than the maximum of %r' % (_short(instance, 40),
                                                      maximum))


# --- patterns, matched in linear time ---------------------------------------------
# jsonschema matches ``pattern`` with Python's ``re``, which backtracks:
# Nova's hostname pattern against 2,000 letters and a ``!`` took 26 s
# (cubic), holding the interpreter lock, and the check runs even when
# ``maxLength`` already failed. RE2 (api/patterns.py) matches every
# schema's pattern in time linear in the value; the few Nova patterns RE2
# cannot take (look-around, as in Nova's flavor and key pair names) are one
# character class between two look-arounds, linear in ``re`` as well.


@functools.cache
def _linear(pattern):
    try:
        return patterns.compile_filter('pattern', pattern)
    except exception.Invalid:
        return re.compile(pattern)


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, 'string') and not _linear(
            pattern).search(instance):
        yield jsonschema.ValidationError('%s does not match %r'
                                         % (_short(instance), pattern))


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    {'minimum': _minimum, 'maximum': _maximum, 'pattern': _pattern})


def validate(schema, body):
    """Raise :class:`~common.exception.Invalid` naming the first bad field."""
    validator = Validator(schema, format_checker=FORMATS)
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is None:
        return body
    raise exception.Invalid(
        'Invalid input for field/attribute %s. Value: %s. %s'
        % (_path(error), _short(error.instance), _message(error)))


_short = jsonbody.short
