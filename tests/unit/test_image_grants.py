"""Image grants: a conductor-issued capability for one operation on one
image, checked by the image API; whatever is presented, verify answers
with the claims or grants.Refused and a reason."""

import base64
import hashlib
import hmac
import json

import pytest

from common import exception
from common.images import grants

KEY = b'k' * 32
IMAGE = '6f1e3c1a-55b1-4d0a-9d0e-2f6f7a4f0b11'
NOW = 1_800_000_000


def _issue(**kw):
    args = dict(image_id=IMAGE, host='host-a', op='read', ttl=600, now=NOW)
    args.update(kw)
    return grants.issue(KEY, **args)


def _refused(token, *, image_id=IMAGE, op='read', now=NOW + 1, key=KEY):
    with pytest.raises(grants.Refused) as err:
        grants.verify(key, token, image_id=image_id, op=op, now=now)
    assert err.value.code == 403
    return str(err.value)


def test_a_grant_verifies_and_says_what_it_grants():
    claims = grants.verify(KEY, _issue(), image_id=IMAGE, op='read',
                           now=NOW + 599)
    assert claims == grants.Claims(image_id=IMAGE, host='host-a', op='read',
                                   expires=NOW + 600)


def test_a_backup_grant_carries_its_rotation():
    claims = grants.verify(KEY, _issue(op='write', rotation=3),
                           image_id=IMAGE, op='write', now=NOW)
    assert claims.rotation == 3
    assert grants.verify(KEY, _issue(op='write'), image_id=IMAGE,
                         op='write', now=NOW).rotation is None


def test_token_shape_per_contract():
    version, payload, _sig = _issue(op='write').split('.')
    assert version == 'g1'
    data = json.loads(base64.urlsafe_b64decode(payload + '=' * 4))
    assert data == {'i': IMAGE, 'h': 'host-a', 'o': 'write', 'e': NOW + 600}


def test_refused_is_a_forbidden_error():
    assert issubclass(grants.Refused, exception.Forbidden)


@pytest.mark.parametrize('later', [600, 601, 10 ** 6])
def test_expired(later):
    assert 'expired' in _refused(_issue(), now=NOW + later)


def test_another_image():
    assert 'another image' in _refused(_issue(), image_id='other')


def test_another_op():
    assert "'read', not 'write'" in _refused(_issue(op='read'), op='write')
    assert "'write', not 'read'" in _refused(_issue(op='write'), op='read')


def test_another_key():
    assert 'bad signature' in _refused(_issue(), key=b'another key')


def _forge(token, **changes):
    """The token with its payload changed and the old signature kept."""
    version, payload, sig = token.split('.')
    data = json.loads(base64.urlsafe_b64decode(payload + '=' * 4))
    data.update(changes)
    raw = json.dumps(data).encode()
    new = base64.urlsafe_b64encode(raw).rstrip(b'=').decode()
    return '.'.join((version, new, sig))


@pytest.mark.parametrize('changes', [
    {'i': 'other-image'}, {'o': 'write'}, {'e': NOW + 10 ** 6},
    {'h': 'host-b'}])
def test_tampered_payload(changes):
    forged = _forge(_issue(), **changes)
    image_id = changes.get('i', IMAGE)
    op = changes.get('o', 'read')
    assert 'bad signature' in _refused(forged, image_id=image_id, op=op)


def test_tampered_signature():
    version, payload, sig = _issue().split('.')
    flipped = ('A' if sig[0] != 'A' else 'B') + sig[1:]
    assert 'bad signature' in _refused('.'.join((version, payload, flipped)))
    assert 'bad signature' in _refused('.'.join((version, payload, '')))


def _signed(payload_bytes):
    """A correctly signed token around any payload: what verify does with
    a payload only a key holder could produce but that is not a grant."""
    payload = base64.urlsafe_b64encode(payload_bytes).rstrip(b'=').decode()
    signed = 'g1.' + payload
    sig = hmac.new(KEY, signed.encode(), hashlib.sha256).digest()
    return signed + '.' + base64.urlsafe_b64encode(sig).rstrip(b'=').decode()


@pytest.mark.parametrize('payload', [
    b'not json', b'\xff\xfe', b'[]', b'null', b'{}',
    b'{"i": 1, "h": "h", "o": "read", "e": 1}',
    b'{"i": "x", "h": "h", "o": "read", "e": "soon"}',
    b'{"i": "x", "h": "h", "o": "read", "e": true}',
    b'{"i": "x", "h": "h", "o": "read", "e": 1.5}',
    b'{"i": "x", "h": "h", "o": "write", "e": 9999999999, "r": -1}',
    b'{"i": "x", "h": "h", "o": "write", "e": 9999999999, "r": "2"}'])
def test_signed_garbage_payload(payload):
    assert 'payload' in _refused(_signed(payload), image_id='x')


@pytest.mark.parametrize('token', [
    None, '', 'g1', 'g1..', 'g1.a.b.c', 'g2.' + 'a' * 20 + '.b',
    'g1.@@@.###', 'g1.a.b', 'g1.é.b', b'\xff', 42, ['g1', 'a', 'b'],
    'g1.' + 'A' * 5000 + '.b', 'g1.a.b=', 'g1.a.b==='])
def test_garbage_tokens(token):
    assert 'refused' in _refused(token)


def test_bytes_token_accepted():
    assert grants.verify(KEY, _issue().encode(), image_id=IMAGE, op='read',
                         now=NOW).op == 'read'


@pytest.mark.parametrize('kw', [{'op': 'delete'}, {'ttl': 0}, {'ttl': -1},
                                {'ttl': 1.5}, {'rotation': 2},
                                {'op': 'write', 'rotation': -1},
                                {'op': 'write', 'rotation': True},
                                {'op': 'write', 'rotation': '2'}])
def test_issue_rejects_bad_arguments(kw):
    with pytest.raises(ValueError):
        _issue(**kw)


def test_a_key_must_be_bytes():
    with pytest.raises(TypeError):
        grants.issue('text', image_id=IMAGE, host='h', op='read', ttl=1)
