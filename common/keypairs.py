"""Key pairs' cryptography (Nova's ``os-keypairs``, issue 24): reading a
public key the user imports, its fingerprint as Nova shows it, and making
a new key pair for a user who asks for one (below microversion 2.92).

Two types, as Nova has them:

* ``ssh``: an OpenSSH public key line (``ssh-rsa AAAA... comment``,
  ed25519, ECDSA); the fingerprint is the MD5 of the key's decoded blob,
  as colon-separated hex pairs (what ``ssh-keygen -l -E md5`` prints).
* ``x509``: a PEM certificate (Windows guests' WinRM); the fingerprint is
  the SHA-1 of its DER form, colon-separated.

The parsing is the ``cryptography`` library's: a key it cannot load is
the user's mistake, answered with a 400 naming ``public_key``.
"""

import base64
import datetime
import hashlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from common import exception

SSH = 'ssh'
X509 = 'x509'
TYPES = (SSH, X509)
# A generated key: RSA of this many bits (as Nova's), its certificate
# valid this long (x509).
RSA_BITS = 2048
CERT_DAYS = 3650


class InvalidKeypair(exception.Invalid):
    msg_fmt = 'Keypair data is invalid: %(reason)s'


def _pairs(digest):
    return ':'.join(digest[i:i + 2] for i in range(0, len(digest), 2))


def ssh_fingerprint(public_key):
    """The MD5 fingerprint of an OpenSSH public key line; InvalidKeypair
    (400) when it does not parse."""
    try:
        key = serialization.load_ssh_public_key(public_key.strip().encode())
    except (ValueError, TypeError, UnicodeError,
            NotImplementedError) as err:
        raise InvalidKeypair(reason='keypair.public_key is not an OpenSSH '
                             'public key (%s): failed to generate '
                             'fingerprint' % (str(err)[:100] or
                                              type(err).__name__)) from None
    line = key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH)
    blob = base64.b64decode(line.split(b' ')[1])
    return _pairs(hashlib.md5(blob, usedforsecurity=False).hexdigest())


def x509_fingerprint(pem):
    """The SHA-1 fingerprint of a PEM certificate; InvalidKeypair (400)
    when it does not parse."""
    try:
        cert = x509.load_pem_x509_certificate(pem.strip().encode())
    except (ValueError, TypeError, UnicodeError) as err:
        raise InvalidKeypair(reason='keypair.public_key is not a PEM X.509 '
                             'certificate (%s): failed to generate X509 '
                             'fingerprint' % (str(err)[:100] or
                                              type(err).__name__)) from None
    return _pairs(cert.fingerprint(hashes.SHA1()).hex())  # noqa: S303


def fingerprint(public_key, key_type=SSH):
    """The fingerprint of ``public_key`` of ``key_type``."""
    if key_type == X509:
        return x509_fingerprint(public_key)
    return ssh_fingerprint(public_key)


def generate(key_type, subject):
    """A new key pair: ``(private_key, public_key, fingerprint)``, the
    private key PEM (shown once, never stored). ``subject`` names an x509
    certificate's holder (Nova: the user)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()).decode()
    if key_type == X509:
        public = _certificate(key, subject)
    else:
        public = key.public_key().public_bytes(
            serialization.Encoding.OpenSSH,
            serialization.PublicFormat.OpenSSH).decode()
        public += ' Generated-by-Tristate'
    return private, public, fingerprint(public, key_type)


def _certificate(key, subject):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                         subject or 'tristate')])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()
