"""A Tristate daemon run as systemd runs it, for tests: its own process,
config file and ``NOTIFY_SOCKET`` (a unix datagram socket the test binds
and reads, as systemd's), stopped with SIGTERM within its unit's
``TimeoutStopSec`` (etc/systemd)."""

import configparser
import os
import signal
import socket
import subprocess
import sys
import time

import conductor

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(
    conductor.__file__)))
UNITS = os.path.join(SOURCE_ROOT, 'etc', 'systemd')
MAINS = {'tristate-api': 'api.cmd.api',
         'tristate-conductor': 'conductor.cmd.conductor',
         'tristate-compute-agent': 'compute_agent.cmd.agent'}


def closed_url(port):
    """A broker that is down: a loopback port nothing listens on."""
    return 'rabbit://guest:guest@127.0.0.1:%d/' % port


def timeout_stop(binary):
    """``TimeoutStopSec`` of ``binary``'s unit, in seconds."""
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read(os.path.join(UNITS, '%s.service' % binary))
    return float(unit['Service']['TimeoutStopSec'])


def ini(sections):
    return '\n'.join('[%s]\n%s\n' % (name, '\n'.join(
        '%s = %s' % item for item in values.items()))
        for name, values in sections.items())


class Daemon:
    """``binary`` started on ``sections`` (a dict of dicts) under ``path``."""

    def __init__(self, path, binary, sections):
        self.path = path
        self.binary = binary
        self.conf = path / ('%s.conf' % binary)
        self.conf.write_text(ini(sections))
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(path / ('%s.notify' % binary)))
        self.out = path / ('%s.out' % binary)
        self.proc = None
        self.seen = []          # every notification received, in order

    def start(self):
        code = 'import sys; from %s import main; sys.exit(main())' % (
            MAINS[self.binary])
        env = dict(os.environ, PYTHONUNBUFFERED='1',
                   NOTIFY_SOCKET=str(self.path / ('%s.notify' % self.binary)),
                   PYTHONPATH=SOURCE_ROOT)
        with open(self.out, 'ab') as out:
            self.proc = subprocess.Popen(
                [sys.executable, '-c', code, '--config-file', str(self.conf)],
                cwd=self.path, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT)
        return self

    def message(self, starting, timeout):
        """The first notification that starts with ``starting``, within
        ``timeout`` seconds (AssertionError naming what came otherwise)."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            self.notify.settimeout(0.5)
            try:
                text = self.notify.recv(65536).decode()
            except TimeoutError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise AssertionError(
                        '%s: no %r in %s s (exit %s); got %r; output:\n%s'
                        % (self.binary, starting, timeout, self.proc.poll(),
                           seen, self.output()[-3000:])) from None
                continue
            seen.append(text)
            self.seen.append(text)
            if text.startswith(starting):
                return text

    def wait_for_text(self, text, timeout):
        """Wait until a notification received so far or from now on
        contains ``text``."""
        deadline = time.monotonic() + timeout
        while not any(text in seen for seen in self.seen):
            left = deadline - time.monotonic()
            assert left > 0, '%s: no %r in %r' % (self.binary, text,
                                                   self.seen)
            self.notify.settimeout(min(left, 0.5))
            try:
                self.seen.append(self.notify.recv(65536).decode())
            except TimeoutError:
                continue

    def terminate(self):
        """SIGTERM; (exit status, seconds it took to exit), or (None, the
        unit's TimeoutStopSec) if it did not exit within that."""
        limit = timeout_stop(self.binary)
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            return None, limit
        return code, time.monotonic() - started

    def output(self):
        return self.out.read_text(errors='replace')

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.notify.close()
