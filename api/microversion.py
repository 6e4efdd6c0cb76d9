"""Compute API microversions, as Nova negotiates them.

A client asks for a version with ``OpenStack-API-Version: compute X.Y`` (or
the legacy ``X-OpenStack-Nova-API-Version: X.Y``); no header means the
minimum, ``latest`` the maximum. A version outside [MIN, MAX] is answered
``406 Not Acceptable``, a malformed one ``400``.

History. At every version Nova defines (2.1 ... 2.100) a body has exactly
the keys Nova's has at that version (Tempest's response schemas are the
oracle: tests/functional/test_api_response_schemas.py); the versions whose
meaning the bodies Tristate serves change (docs/operator-guide.md):

* 2.1: the base. ``POST /servers`` answers ``id``, ``links`` and
  ``OS-DCF:diskConfig`` only, at every version.
* 2.2, 2.10, 2.35, 2.92: a key pair's ``type`` (create 201, delete 204),
  an admin's ``user_id``, paging of the list, then import only
  (api/routes/keypairs.py).
* 2.3: more ``OS-EXT-SRV-ATTR:*`` keys (admins).
* 2.9 ``locked``, 2.16 ``host_status`` (admins), 2.19 ``description``,
  2.26 ``tags``, 2.63 ``trusted_image_certificates``, 2.71
  ``server_groups`` (not in /servers/detail), 2.73 ``locked_reason``, 2.90
  ``OS-EXT-SRV-ATTR:hostname`` for everyone, 2.96
  ``pinned_availability_zone``, 2.100 ``scheduler_hints``: server keys.
* 2.90, 2.94: ``hostname`` on create, update and rebuild, then as an
  FQDN (api/diskhost.py).
* 2.28: a hypervisor's ``cpu_info`` is an object.
* 2.36, 2.57: quota sets lose the network keys, then the injected files;
  from 2.36 ``GET /os-networks`` is 404, as Nova's proxy APIs (below it,
  nova-network's view of the networks, which openstackclient reads).
* 2.45: ``createImage`` and ``createBackup`` answer ``{"image_id": ...}``
  instead of a ``Location`` header.
* 2.47: a server's ``flavor`` is embedded (vcpus, ram, disk, original_name)
  instead of a link.
* 2.51: an action's ``events`` are shown to its project too (before: to
  admins only); the ``traceback`` stays admin-only.
* 2.53: hypervisor ids are UUIDs (derived from the host's name; its
  number before).
* 2.54, 2.57: a rebuild's answer has ``key_name``, then ``user_data``.
* 2.55, 2.61: a flavor's ``description``, then its ``extra_specs``.
* 2.58: actions carry ``updated_at``.
* 2.62: events carry ``hostId`` (and ``host`` for admins).
* 2.75: ``PUT /servers/{id}`` and rebuild answer the whole server (before:
  Nova's basic view); a flavor's ``swap`` is 0, not "", when it has none.
* 2.84: events carry ``details`` (the failure's message).
* 2.88: hypervisors show no capacity figures, and an ``uptime``.
* 2.101 (Tristate's own): the PENDING vm_state and status are shown (seed
  004; older requests see ``ERROR`` for both ``status`` and
  ``OS-EXT-STS:vm_state``), and every ``tristate:*`` key, the reconcile
  policies in a server's metadata, the ``disk`` and lease quotas, a
  hypervisor's ``tristate:capacity``, ``tristate:oper_states`` and
  ``tristate:last_heartbeat``; the network API (``/os-networks``: the full
  detail, create and delete for admins: api/routes/networks.py).
"""

import functools
import re

from common import exception


@functools.total_ordering
class APIVersion:
    """A microversion X.Y, compared as numbers (2.10 > 2.9)."""

    __slots__ = ('major', 'minor')

    def __init__(self, major, minor):
        self.major = major
        self.minor = minor

    @classmethod
    def parse(cls, text, header=None):
        """The version ``text`` names; a 400 naming ``header`` if it is
        malformed, or has numbers of more than 9 digits (no version has:
        and Python does not convert 4,300 digits or more)."""
        match = _FORMAT.match(text.strip())
        if not match:
            raise _malformed(text, header)
        return cls(int(match.group(1)), int(match.group(2)))

    def _key(self):
        return (self.major, self.minor)

    def __eq__(self, other):
        return isinstance(other, APIVersion) and self._key() == other._key()

    def __lt__(self, other):
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        return '%d.%d' % (self.major, self.minor)

    __repr__ = __str__


_DIGITS = 9
_FORMAT = re.compile(r'^([1-9]\d{0,%d})\.([1-9]\d{0,%d}|0)$'
                     % (_DIGITS - 1, _DIGITS - 1), re.ASCII)

def _malformed(text, header):
    shown = repr(text) if len(text) <= 40 else '%r...(%d characters)' % (
        text[:40], len(text))
    return exception.Invalid(
        reason='API version string %s%s is of invalid format: it must be '
               'MajorNum.MinorNum (numbers of at most %d digits) or latest'
               % (shown, ' (header %s)' % header if header else '', _DIGITS))


MIN = APIVersion(2, 1)
IMAGE_ID_BODY = APIVersion(2, 45)
EMBEDDED_FLAVOR = APIVersion(2, 47)
EVENTS_FOR_ALL = APIVersion(2, 51)
EVENT_HOST = APIVersion(2, 62)
EVENT_DETAILS = APIVersion(2, 84)
HOST_STATUS = APIVersion(2, 16)
# Tristate's own microversion, above Nova's maximum (2.100): PENDING and
# every ``tristate:*`` key of a body.
TRISTATE = APIVersion(2, 101)
PENDING = TRISTATE
MAX = TRISTATE

SERVICE = 'compute'
HEADER = 'OpenStack-API-Version'
LEGACY_HEADER = 'X-OpenStack-Nova-API-Version'


class NotAcceptable(exception.TristateError):
    msg_fmt = ('Version %(version)s is not supported by the API. Minimum is '
               '%(min)s and maximum is %(max)s.')
    code = 406


def _requested(headers):
    """(the version text the client sent, its header), or (None, None)."""
    value = headers.get(HEADER)
    if value:
        for part in value.split(','):
            service, _, version = part.strip().partition(' ')
            if service.lower() == SERVICE:
                return version.strip(), HEADER
    legacy = headers.get(LEGACY_HEADER) or None
    return legacy, LEGACY_HEADER if legacy else None


def from_headers(headers):
    """The :class:`APIVersion` a request asks for (MIN when it says none)."""
    text, header = _requested(headers)
    if text is None:
        return MIN
    if text.strip().lower() == 'latest':
        return MAX
    version = APIVersion.parse(text, header)
    if not MIN <= version <= MAX:
        raise NotAcceptable(version=version, min=MIN, max=MAX)
    return version


def response_headers(version):
    return {HEADER: '%s %s' % (SERVICE, version),
            LEGACY_HEADER: str(version),
            'Vary': '%s, %s' % (HEADER, LEGACY_HEADER)}
