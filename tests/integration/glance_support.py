"""A real Glance for the tests: PyPI's ``glance`` package run as a separate
process, so that what Tristate says about "speaking Glance v2" is checked
against the real thing (issue 21).

Glance pins library versions of its own (SQLAlchemy, oslo.*), so it lives in
a virtualenv of its own, never Tristate's: ``tools/run-tests.sh`` makes one
(``glance`` and ``gunicorn``, pinned there) and exports its path as
``TRISTATE_TEST_GLANCE``. Without it the tests that need Glance are
skipped, or fail when ``CI=true``: CI must run them.

The set-up is the smallest that works with Glance 33:

* no Keystone: ``[paste_deploy]`` selects a pipeline without
  ``authtoken``. Two identities are offered (:data:`OPEN` and
  :data:`HEADERS`, below);
* the ``file`` store under a temporary directory
  (``[glance_store] stores = file``), the staging area beside it
  (``node_staging_uri``, which the import methods need);
* SQLite (``[database] connection``), migrated by ``glance-manage db_sync``;
* the WSGI app ``glance.wsgi.api:application`` under gunicorn: in Glance 33
  the ``glance-api`` console script only says that the standalone server
  is gone and exits 1. Gunicorn listens on a loopback socket the
  test binds first (port 0) and hands over as ``fd://N``: no port race.

A Glance answers about 1.5 s after gunicorn starts on this machine
(``db_sync`` takes 1.6 s before that; stopping it 0.5 s), several times
that on a loaded one, so fixtures start one per
module (:func:`fixture`), and the tests of a module keep apart by project
(:data:`HEADERS`) or by the ids they made.
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid as uuidlib

import pytest
import requests

from bench import services

GLANCE_ENV = 'TRISTATE_TEST_GLANCE'
# Every request is Glance's "unauthenticated context": an admin with no
# project and no roles. It is ``[paste_deploy] flavor =`` (empty) on the
# paste file the package ships. Glance's default policies (role:admin,
# project scope) refuse such a context, so this mode also sets
# ``[oslo_policy] enforce_new_defaults = False`` (the pre-RBAC rules,
# which let anyone do anything but make an image public): what an
# operator of a Glance without Keystone does.
OPEN = 'open'
# Glance's ``context`` middleware without ``authtoken`` in front of it: the
# identity is read from the headers keystonemiddleware would set after
# checking a token (X-Identity-Status, X-Project-Id, X-Roles). The default
# policies apply unchanged, so projects and visibility are Glance's own.
HEADERS = 'headers'
START_TIMEOUT = 120     # seconds; a loaded 2-core machine takes ~10
POLL = 0.1
STOP_TIMEOUT = 30

_TRUSTED_PASTE = """\
[pipeline:glance-api-trusted]
pipeline = versionnegotiation context rootapp

[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v2: apiv2app

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[filter:versionnegotiation]
paste.filter_factory = \
glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory

[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory
"""


def require_venv():
    """The Glance virtualenv of ``TRISTATE_TEST_GLANCE``; skips (fails in
    CI) when it is not set or lacks what the tests run."""
    venv = os.environ.get(GLANCE_ENV)
    if venv:
        missing = [name for name in ('gunicorn', 'glance-manage')
                   if not os.access(os.path.join(venv, 'bin', name),
                                    os.X_OK)]
        if not missing:
            return venv
        reason = '%s=%s has no bin/%s' % (GLANCE_ENV, venv,
                                          ' nor bin/'.join(missing))
    else:
        reason = ('%s is not set, so the tests against a real Glance cannot '
                  'run (tools/run-tests.sh makes a virtualenv with glance '
                  'and gunicorn and sets it)' % GLANCE_ENV)
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs a real Glance: ' + reason, pytrace=False)
    pytest.skip(reason)


def require_tool(name):
    """Skip (fail in CI) because the program ``name`` is not installed."""
    reason = ('%s is not installed (tools/run-tests.sh installs it)' % name)
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs ' + reason, pytrace=False)
    pytest.skip(reason)


class Glance:
    """One Glance API process of the virtualenv ``venv``, its config, data
    and log under ``workdir``; ``auth`` is :data:`OPEN` or
    :data:`HEADERS`."""

    def __init__(self, venv, workdir, *, auth=OPEN):
        self.venv = venv
        self.workdir = workdir
        self.auth = auth
        self.log = os.path.join(workdir, 'glance-api.log')
        self.store = os.path.join(workdir, 'images')
        self.proc = None
        self.url = None
        self.startup_seconds = None     # from exec to the first answer

    def _write_config(self):
        staging = os.path.join(self.workdir, 'staging')
        os.makedirs(self.store)
        os.makedirs(staging)
        if self.auth == HEADERS:
            paste = os.path.join(self.workdir, 'glance-api-paste.ini')
            with open(paste, 'w') as out:
                out.write(_TRUSTED_PASTE)
            flavor, policy = 'trusted', {}
        else:
            paste = os.path.join(self.venv, 'etc', 'glance',
                                 'glance-api-paste.ini')
            flavor = ''
            policy = {'enforce_new_defaults': 'False',
                      'enforce_scope': 'False'}
        sections = {
            'DEFAULT': {'node_staging_uri': 'file://' + staging},
            'paste_deploy': {'flavor': flavor, 'config_file': paste},
            'database': {'connection': 'sqlite:///' + os.path.join(
                self.workdir, 'glance.sqlite')},
            'glance_store': {'stores': 'file', 'default_store': 'file',
                             'filesystem_store_datadir': self.store},
            'oslo_concurrency': {'lock_path': os.path.join(self.workdir,
                                                           'locks')},
            'oslo_policy': policy,
        }
        path = os.path.join(self.workdir, 'glance-api.conf')
        with open(path, 'w') as out:
            out.write(services.ini(sections))
        return path

    def _run_logged(self, argv, **kwargs):
        with open(self.log, 'ab') as out:
            return subprocess.Popen(
                argv, cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, **kwargs)

    def start(self, timeout=START_TIMEOUT):
        """Write the config, migrate, start gunicorn; returns once Glance
        answers its version discovery (AssertionError with the log's tail
        if it does not within ``timeout`` seconds)."""
        conf = self._write_config()
        sync = self._run_logged([os.path.join(self.venv, 'bin',
                                              'glance-manage'),
                                 '--config-file', conf, 'db_sync'])
        assert sync.wait(timeout=timeout) == 0, (
            'glance-manage db_sync failed:\n' + self.log_tail())
        listener = socket.socket()
        listener.bind(('127.0.0.1', 0))
        listener.listen(64)
        with listener:
            self.url = 'http://127.0.0.1:%d' % listener.getsockname()[1]
            env = dict(os.environ, OS_GLANCE_CONFIG_DIR=self.workdir)
            began = time.monotonic()
            self.proc = self._run_logged(
                [os.path.join(self.venv, 'bin', 'gunicorn'),
                 '--bind', 'fd://%d' % listener.fileno(),
                 '--workers', '1', '--threads', '4', '--timeout', '120',
                 '--access-logfile', '-', 'glance.wsgi.api:application'],
                env=env, pass_fds=(listener.fileno(),),
                start_new_session=True)
        self._wait_ready(began, timeout)
        return self

    def _wait_ready(self, began, timeout):
        deadline = began + timeout
        while True:
            with contextlib.suppress(requests.RequestException):
                if requests.get(self.url + '/',
                                timeout=5).status_code == 300:
                    self.startup_seconds = time.monotonic() - began
                    return
            if self.proc.poll() is not None:
                raise AssertionError('Glance exited with %s before it '
                                     'answered:\n%s' % (self.proc.returncode,
                                                        self.log_tail()))
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError('Glance did not answer %s/ within %d s:'
                                     '\n%s' % (self.url, timeout,
                                               self.log_tail()))
            time.sleep(POLL)

    def stop(self):
        """SIGTERM to gunicorn's master (it stops its worker), SIGKILL to
        the whole session if it has not exited in time."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def requests_seen(self, method, path, *, settle=0.5, timeout=10):
        """How many ``method path`` requests gunicorn's access log shows
        (``path`` without its query). Gunicorn writes the line after the
        answer is sent, so the count is read until it has not moved for
        ``settle`` seconds."""
        line = re.compile(r'"%s %s(\?\S*)? HTTP/' % (re.escape(method),
                                                     re.escape(path)))

        def count():
            with open(self.log, errors='replace') as log:
                return sum(1 for text in log if line.search(text))

        deadline = time.monotonic() + timeout
        seen, since = count(), time.monotonic()
        while True:
            time.sleep(POLL)
            now = count()
            if now != seen:
                seen, since = now, time.monotonic()
            elif (time.monotonic() - since >= settle
                  or time.monotonic() > deadline):
                return seen

    def log_tail(self, lines=40):
        with contextlib.suppress(OSError), open(self.log, errors='replace') \
                as log:
            return ''.join(log.readlines()[-lines:])
        return '(no log)'

    def headers(self, project=None, *, admin=False):
        """What a request of ``project`` (a user of it; an admin of it if
        ``admin``) sends: nothing in :data:`OPEN` mode, where everyone is
        an admin anyway; the identity headers in :data:`HEADERS` mode."""
        if self.auth != HEADERS or project is None:
            return {}
        roles = 'admin,member,reader' if admin else 'member,reader'
        return {'X-Identity-Status': 'Confirmed', 'X-Project-Id': project,
                'X-User-Id': 'user-of-' + project, 'X-Roles': roles}


@contextlib.contextmanager
def running(*, auth=OPEN):
    """A started :class:`Glance`, stopped and its files removed after."""
    venv = require_venv()
    workdir = tempfile.mkdtemp(prefix='tristate-glance-')
    glance = Glance(venv, workdir, auth=auth)
    try:
        yield glance.start()
    finally:
        glance.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def fixture(*, auth=OPEN):
    """A module-scoped pytest fixture yielding a running :class:`Glance`
    (its ``url`` is the base URL: ``/`` is version discovery, ``/v2`` the
    API). Bind it to a name in a test module: ``glance =
    glance_support.fixture()``.

    Module scope because a start costs seconds (db_sync, imports) and the
    tests need not a fresh Glance but their own images: each uses its own
    project (:meth:`Glance.headers`) or the ids it made."""
    @pytest.fixture(scope='module')
    def _glance():
        with running(auth=auth) as glance:
            yield glance
    return _glance


def new_project():
    """A project id no other test uses."""
    return 'project-%s' % uuidlib.uuid4().hex[:12]
