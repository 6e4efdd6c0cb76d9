"""``POST /servers/{id}/action``: each Nova action key, its body schema and
the action of the table (:mod:`common.actions`) it runs, declared as data.

``params`` turns the validated body into the parameters the conductor's
flow takes (:data:`conductor.flows.PARAMS`). ``kind`` says how the request
is carried out: ``task`` through ``run_action``, ``delete`` through the hard
delete (no bus needed), ``reset`` through ``reset_state``.
"""

import dataclasses
import secrets
import string
import typing

from api import schemas

TASK = 'task'
DELETE = 'delete'
RESET = 'reset'
LOCK = 'lock'           # the lock: no task, an attribute (api.routes.server_attrs)
CONSOLE = 'console'     # console log and URLs (api.routes.consoles)
EVACUATE = 'evacuate'   # checked per microversion (api.evacuate)
SECURITY_GROUP = 'security_group'   # add/remove one (api.secgroups)


def _none(body):
    return {}


def ref(value):
    """An id, or the last path segment of a URL (Nova accepts both)."""
    return str(value).rstrip('/').rsplit('/', 1)[-1]


@dataclasses.dataclass(frozen=True)
class ServerAction:
    key: str                       # the body's one key, e.g. "os-stop"
    action: str                    # the action table's name, e.g. "stop"
    schema: dict = dataclasses.field(default_factory=lambda: schemas.NO_BODY)
    params: typing.Callable = _none
    kind: str = TASK
    status: int = 202

    def resolve(self, body):
        """(table action, params) for a validated body."""
        return self.action, self.params(body)


@dataclasses.dataclass(frozen=True)
class Reboot(ServerAction):
    def resolve(self, body):
        hard = body['type'].upper() == 'HARD'
        return ('reboot_hard' if hard else 'reboot'), {}


def _rebuild(body):
    return {'image_ref': ref(body['imageRef'])}


# Letters and digits that cannot be read one for another (no 0/O, 1/l/I).
_PASSWORD_CHARS = ''.join(c for c in string.ascii_letters + string.digits
                          if c not in '0O1lI')


# A random byte below this maps onto the characters evenly (byte % count).
_EVEN_BELOW = 256 - 256 % len(_PASSWORD_CHARS)


def generate_password(length=12):
    """``length`` characters drawn uniformly from :data:`_PASSWORD_CHARS`
    by the system's CSPRNG. The bytes are read in one call (the API
    answers every create with a password: a call per character was a
    dozen system calls a create, each letting another thread take the
    interpreter); bytes that would favour the first characters are
    skipped."""
    chars = []
    while len(chars) < length:
        chars.extend(_PASSWORD_CHARS[b % len(_PASSWORD_CHARS)]
                     for b in secrets.token_bytes(2 * length)
                     if b < _EVEN_BELOW)
    return ''.join(chars[:length])


def _rescue(body):
    """The rescue image, and the password: the body's ``adminPass`` or
    None, which the route replaces with a generated one."""
    body = body or {}
    params = {'password': body.get('adminPass')}
    if body.get('adminPass') is not None:
        params['password_required'] = True
    if body.get('rescue_image_ref'):
        params['image_ref'] = ref(body['rescue_image_ref'])
    return params


def _resize(body):
    return {'flavor': ref(body['flavorRef'])}


def _snapshot(body):
    return dict({'image_name': body['name']}, **_metadata(body))


def _metadata(body):
    """The snapshot's user properties (``metadata``), if any."""
    return {'metadata': body['metadata']} if body.get('metadata') else {}


def _backup(body):
    return dict({'image_name': body['name'],
                 'rotation': int(body['rotation']),
                 'backup_type': body['backup_type']}, **_metadata(body))


def _password(body):
    return {'password': body['adminPass']}


def _lock(body):
    return {'locked': True, 'reason': (body or {}).get('locked_reason')}


def _unlock(body):
    return {'locked': False}


def _console(body):
    length = (body or {}).get('length')
    return {'length': None if length is None else int(length)}


def _console_type(body):
    return {'type': body['type']}


def _migrate(body):
    return {'host': body['host']} if body.get('host') else {}


def _migrate_cold(body, version=None):
    """Nova's ``migrate``: ``null``, or from 2.56 ``{"host": ...}`` (the
    admin's destination; null or absent: the scheduler's choice)."""
    host = (body or {}).get('host')
    return {'host': host} if host else {}


def _reset(body):
    return {'state': body['state']}


# Nova's unshelve body by microversion: anything before 2.77 (ignored);
# from 2.77 null or {"availability_zone": name}; from 2.91 null or an
# object with "availability_zone" (a name, or null to unpin the server
# from its zone) and/or "host" (admins).
UNSHELVE_AZ = (2, 77)
UNSHELVE_HOST = (2, 91)
_UNSHELVE_277 = {'type': ['object', 'null'],
                 'properties': {'availability_zone': schemas.NAME},
                 'required': ['availability_zone'],
                 'additionalProperties': False}
# Nova's 2.91 zone and host are any strings; here one line of at most 255
# characters, as every zone and host name is (else a 400 naming the field,
# not the conductor's "not available" or "not found" echoing the text).
_UNSHELVE_291 = {'type': ['object', 'null'],
                 'properties': {'availability_zone': {
                     'type': ['string', 'null'], 'maxLength': 255,
                     'format': schemas.PRINTABLE},
                     'host': {'type': 'string', 'maxLength': 255,
                              'format': schemas.PRINTABLE}},
                 'additionalProperties': False}


def unshelve_params(body, version):
    """The conductor's unshelve parameters of a request body at
    ``version`` (a ``(major, minor)`` pair or an APIVersion), validated
    as Nova validates it: ``availability_zone`` only when the body names
    one (None: unpin), ``host`` only when given."""
    if hasattr(version, 'minor'):
        version = (version.major, version.minor)
    if version < UNSHELVE_AZ:
        return {}
    schema = _UNSHELVE_291 if version >= UNSHELVE_HOST else _UNSHELVE_277
    schemas.validate({'type': 'object', 'properties': {'unshelve': schema}},
                     {'unshelve': body})
    body = body or {}
    params = {}
    if 'availability_zone' in body:
        params['availability_zone'] = body['availability_zone']
    if version >= UNSHELVE_HOST and body.get('host'):
        params['host'] = body['host']
    return params


ACTIONS = {a.key: a for a in (
    ServerAction('os-stop', 'stop'),
    ServerAction('os-start', 'start'),
    Reboot('reboot', 'reboot', schemas.REBOOT),
    ServerAction('pause', 'pause'),
    ServerAction('unpause', 'unpause'),
    ServerAction('suspend', 'suspend'),
    ServerAction('resume', 'resume'),
    ServerAction('rescue', 'rescue', schemas.RESCUE, _rescue, status=200),
    ServerAction('unrescue', 'unrescue'),
    ServerAction('rebuild', 'rebuild', schemas.REBUILD, _rebuild),
    ServerAction('resize', 'resize', schemas.RESIZE, _resize),
    ServerAction('confirmResize', 'confirm_resize', status=204),
    ServerAction('revertResize', 'revert_resize'),
    ServerAction('createImage', 'snapshot', schemas.CREATE_IMAGE, _snapshot),
    ServerAction('createBackup', 'backup', schemas.CREATE_BACKUP, _backup),
    ServerAction('changePassword', 'set_password', schemas.CHANGE_PASSWORD,
                 _password),
    ServerAction('os-migrateLive', 'live_migrate', schemas.MIGRATE_LIVE,
                 _migrate),
    ServerAction('evacuate', 'evacuate', {'type': 'object'}, kind=EVACUATE,
                 status=200),
    ServerAction('migrate', 'migrate', schemas.MIGRATE, _migrate_cold),
    # Tristate's own: Nova soft-deletes on DELETE when configured to;
    # here DELETE always hard-deletes and soft delete is asked for.
    # Nova's shelving; unshelve's body is checked per microversion
    # (unshelve_params)
    ServerAction('shelve', 'shelve', schemas.ANYTHING),
    ServerAction('shelveOffload', 'shelve_offload', schemas.ANYTHING),
    ServerAction('unshelve', 'unshelve', schemas.ANYTHING),
    ServerAction('tristate:softDelete', 'soft_delete'),
    ServerAction('restore', 'restore'),
    ServerAction('forceDelete', 'delete', kind=DELETE),
    ServerAction('os-resetState', 'reset_state', schemas.RESET_STATE, _reset,
                 kind=RESET),
    ServerAction('addSecurityGroup', 'set_security_groups',
                 schemas.SECURITY_GROUP_ACTION, kind=SECURITY_GROUP),
    ServerAction('removeSecurityGroup', 'set_security_groups',
                 schemas.SECURITY_GROUP_ACTION, kind=SECURITY_GROUP),
    ServerAction('lock', 'lock', schemas.LOCK, _lock, kind=LOCK),
    ServerAction('unlock', 'unlock', schemas.NO_BODY, _unlock, kind=LOCK),
    ServerAction('os-getConsoleOutput', 'get_console_output',
                 schemas.CONSOLE_OUTPUT, _console, kind=CONSOLE, status=200),
    ServerAction('os-getSerialConsole', 'get_serial_console',
                 schemas.SERIAL_CONSOLE, _console_type, kind=CONSOLE,
                 status=200),
    ServerAction('os-getVNCConsole', 'get_vnc_console',
                 schemas.VNC_CONSOLE, _console_type, kind=CONSOLE,
                 status=200),
)}


# Nova's other server action keys, which Tristate does not carry out yet:
# what would build each, and the microversions Nova serves it at (outside
# them Nova answers 404, as for a route it does not have). For a server the
# caller can see, a 400 saying it is not supported yet; for one it cannot,
# Nova's 404. ``resetNetwork`` is gone from Nova (410) and
# ``os-getRDPConsole`` is refused by Nova itself (400).
@dataclasses.dataclass(frozen=True)
class Unbuilt:
    key: str
    what: str
    since: tuple = (2, 1)
    until: tuple = None
    status: int = 400


_NETWORKING = 'guest networking (issue 23)'
_CONSOLES = 'remote consoles (issue 24)'
_MOBILITY = 'the mobility issue'
UNBUILT = {u.key: u for u in (
    Unbuilt('trigger_crash_dump', 'crash dumps (an NMI to the guest)',
            since=(2, 17)),
    Unbuilt('addFixedIp', _NETWORKING, until=(2, 43)),
    Unbuilt('removeFixedIp', _NETWORKING, until=(2, 43)),
    Unbuilt('addFloatingIp', _NETWORKING, until=(2, 43)),
    Unbuilt('removeFloatingIp', _NETWORKING, until=(2, 43)),
    Unbuilt('injectNetworkInfo', _NETWORKING),
    Unbuilt('os-getVNCConsole', _CONSOLES, until=(2, 5)),
    Unbuilt('os-getSPICEConsole', _CONSOLES, until=(2, 5)),
    Unbuilt('os-getSerialConsole', _CONSOLES, until=(2, 5)),
    Unbuilt('os-getRDPConsole', 'nothing: Nova removed RDP consoles too',
            until=(2, 5)),
    Unbuilt('resetNetwork', 'nothing: Nova removed it', status=410),
) if u.key not in ACTIONS}
