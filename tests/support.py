"""Small helpers that tests of several kinds share (ports, certificates)."""

import socket
import subprocess


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def self_signed(directory, *, name='test', cert='cert.pem', key='key.pem'):
    """A throwaway self-signed EC certificate for CN ``name`` and its key,
    written to ``directory`` by openssl (as the test broker's CA is made);
    returns (cert path, key path)."""
    cert_path, key_path = directory / cert, directory / key
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
                    'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
                    '-subj', '/CN=%s' % name, '-keyout', str(key_path),
                    '-out', str(cert_path)], check=True, capture_output=True)
    return cert_path, key_path
