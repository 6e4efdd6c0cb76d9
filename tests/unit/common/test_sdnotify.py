"""systemd readiness over NOTIFY_SOCKET, a unix datagram socket."""

import os
import socket

import pytest

from common import sdnotify


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    path = str(tmp_path / 'notify')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    monkeypatch.setenv(sdnotify.ENV, path)
    yield sock
    sock.close()


def test_ready_and_stopping_are_sent(notify_socket):
    assert sdnotify.ready('serving on http://x')
    lines = notify_socket.recv(4096).decode().split('\n')
    assert lines == ['READY=1', 'MAINPID=%d' % os.getpid(),
                     'STATUS=serving on http://x']
    assert sdnotify.stopping()
    assert notify_socket.recv(4096) == b'STOPPING=1'
    assert sdnotify.status('busy')
    assert notify_socket.recv(4096) == b'STATUS=busy'


def test_abstract_socket_names(monkeypatch):
    name = 'tristate-test-%d' % os.getpid()
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind('\0' + name)
        sock.settimeout(5)
        monkeypatch.setenv(sdnotify.ENV, '@' + name)
        assert sdnotify.ready()
        assert sock.recv(4096).startswith(b'READY=1\n')


def test_nothing_happens_outside_systemd(monkeypatch, tmp_path):
    monkeypatch.delenv(sdnotify.ENV, raising=False)
    assert sdnotify.ready() is False
    monkeypatch.setenv(sdnotify.ENV, str(tmp_path / 'nobody-listens'))
    assert sdnotify.ready() is False          # logged, never raised
