"""Small helpers that tests of several kinds share (ports, certificates,
a daemon's start on a configuration file, a server process's stop and
its API's hosts)."""

import os
import signal
import socket
import subprocess

import requests
from oslo_config import cfg

# listening(port): shared with the benchmarks' daemons
from bench.core import listening  # noqa: F401
from common import affinity
from common import conf as tconf
from common import service


def thread_cpus():
    """The distinct CPU sets this process's threads may run on, each a
    frozenset: {frozenset({1})} when every thread is pinned to CPU 1."""
    cpus = set()
    for tid in affinity.threads():
        try:
            cpus.add(frozenset(os.sched_getaffinity(tid)))
        except ProcessLookupError:
            continue        # the thread ended meanwhile
    return cpus


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


def prepare(tmp_path, text):
    """A daemon's start (:func:`common.service.prepare`) on a config file
    in ``tmp_path``: ``state_dir`` there, then ``text``. A configuration it
    cannot use exits before setting up logging: the test's logging is left
    alone."""
    path = tmp_path / 'tristate.conf'
    path.write_text('[DEFAULT]\nstate_dir = %s\n%s' % (tmp_path, text))
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    return service.prepare(['--config-file', str(path)], conf=conf)


def stop(proc, *, timeout=30):
    """SIGTERM to ``proc`` (a Popen, or None) unless it has ended; SIGKILL
    if it has not exited within ``timeout`` seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def hypervisors_up(endpoint, *, unanswered=requests.ConnectionError):
    """How many hypervisors ``GET endpoint/os-hypervisors/detail`` lists as
    up (0 for an error answer); None if a request exception of the
    ``unanswered`` kinds says the API does not answer yet."""
    try:
        resp = requests.get(endpoint + '/os-hypervisors/detail', timeout=5)
    except unanswered:
        return None
    hosts = resp.json().get('hypervisors', []) if resp.ok else []
    return len([h for h in hosts if h['state'] == 'up'])
