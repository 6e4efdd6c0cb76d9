"""Grants: the capability that lets an agent read or write one image.

Agents never hold database credentials nor a user's token. With each task
that needs an image (build, rebuild, rescue: ``read``; snapshot, backup:
``write``) the conductor issues a grant, and the agent sends it to the image
API as the ``X-Tristate-Image-Grant`` header. The API checks it with the
same key (both have the database, where the key lives: see ``key`` in the
image DB module); nothing about a grant is stored.

A token is ``g1.<payload>.<signature>``: ``payload`` the unpadded base64url
of the JSON ``{"i": image id, "h": host, "o": op, "e": expiry}`` (expiry in
whole seconds since the epoch; a backup's write grant adds ``"r"``, its
rotation), ``signature`` the unpadded base64url of the
HMAC-SHA256, under the key, of ``g1.<payload>``. A grant is checked when a
transfer starts; one under way is not cut when it expires.

These are pure functions: the key is passed in and ``now`` can be injected.
Whatever a client sends, :func:`verify` either returns the claims or raises
:class:`Refused` with the reason (never another exception).
"""

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import time

from common import exception

VERSION = 'g1'
OPS = ('read', 'write')
# Far above a real token (~200 characters): refuse a huge header before
# decoding it.
MAX_TOKEN_LENGTH = 2048


class Refused(exception.Forbidden):
    msg_fmt = 'Image grant refused: %(reason)s.'


@dataclasses.dataclass(frozen=True)
class Claims:
    """What a valid grant says: ``op`` on ``image_id`` for the agent of
    ``host``, until ``expires`` (seconds since the epoch)."""

    image_id: str
    host: str
    op: str
    expires: int
    # A backup's write grant: how many backups of its type the instance
    # keeps once this one is active (the image API deletes the older ones).
    rotation: int | None = None


def _b64encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode('ascii')


def _b64decode(text):
    padded = text + '=' * (-len(text) % 4)
    return base64.urlsafe_b64decode(padded.encode('ascii'))


def _sign(key, signed):
    return hmac.new(key, signed.encode('ascii'), hashlib.sha256).digest()


def _check_key(key):
    if not isinstance(key, bytes) or not key:
        raise TypeError('a grant key is non-empty bytes')


def issue(key, *, image_id, host, op, ttl, now=None, rotation=None):
    """A token granting ``op`` ('read' or 'write') on ``image_id`` to the
    agent of ``host`` for ``ttl`` seconds from ``now``; ``rotation``, a
    backup's (write grants only)."""
    _check_key(key)
    if op not in OPS:
        raise ValueError('grant op %r: expected one of %s' % (op, OPS))
    if not isinstance(ttl, int) or ttl <= 0:
        raise ValueError('grant ttl %r: expected a positive int' % (ttl,))
    if rotation is not None and (op != 'write' or type(rotation) is not int
                                 or rotation < 0):
        raise ValueError('grant rotation %r: expected a whole number >= 0 '
                         'on a write grant' % (rotation,))
    now = time.time() if now is None else now
    claims = {'i': str(image_id), 'h': str(host), 'o': op,
              'e': int(now) + ttl}
    if rotation is not None:
        claims['r'] = rotation
    payload = _b64encode(json.dumps(claims, separators=(',', ':'),
                                    sort_keys=True).encode('utf-8'))
    signed = '%s.%s' % (VERSION, payload)
    return '%s.%s' % (signed, _b64encode(_sign(key, signed)))


def _split(token):
    if isinstance(token, bytes):
        try:
            token = token.decode('ascii')
        except UnicodeDecodeError:
            raise Refused(reason='not an ASCII token') from None
    if not isinstance(token, str) or not token:
        raise Refused(reason='no token')
    if len(token) > MAX_TOKEN_LENGTH:
        raise Refused(reason='token longer than %d characters'
                      % MAX_TOKEN_LENGTH)
    if not token.isascii():
        raise Refused(reason='not an ASCII token')
    parts = token.split('.')
    if len(parts) != 3 or parts[0] != VERSION:
        raise Refused(reason='not a %s.<payload>.<signature> token' % VERSION)
    return parts


def _decode_claims(payload):
    try:
        data = json.loads(_b64decode(payload).decode('utf-8'))
    except (binascii.Error, ValueError):
        raise Refused(reason='unreadable payload') from None
    if (not isinstance(data, dict)
            or not all(isinstance(data.get(k), str) for k in 'iho')
            or type(data.get('e')) is not int):
        raise Refused(reason='payload without i, h, o and e')
    rotation = data.get('r')
    if rotation is not None and (type(rotation) is not int or rotation < 0):
        raise Refused(reason='payload with a rotation that is not a whole '
                             'number >= 0')
    return Claims(image_id=data['i'], host=data['h'], op=data['o'],
                  expires=data['e'], rotation=rotation)


def verify(key, token, *, image_id, op, now=None):
    """The :class:`Claims` of ``token`` if it is a grant, signed with
    ``key``, of ``op`` on ``image_id``, not expired at ``now``; else
    :class:`Refused` naming why."""
    _check_key(key)
    version, payload, signature = _split(token)
    try:
        given = _b64decode(signature)
    except (binascii.Error, ValueError):
        raise Refused(reason='unreadable signature') from None
    expected = _sign(key, '%s.%s' % (version, payload))
    if not hmac.compare_digest(given, expected):
        raise Refused(reason='bad signature')
    claims = _decode_claims(payload)
    now = time.time() if now is None else now
    if claims.expires <= now:
        raise Refused(reason='expired')
    if claims.image_id != image_id:
        raise Refused(reason='granted for another image')
    if claims.op != op:
        raise Refused(reason='granted for %r, not %r' % (claims.op, op))
    return claims
