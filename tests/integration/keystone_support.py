"""A real Keystone for the tests: PyPI's ``keystone`` package run as a
separate process, so that ``auth_strategy = keystone`` and the catalog
Tristate registers are checked against the real thing (issue 22), by
Tristate's own tests and by Tempest (``tools/tempest.py``).

Keystone pins library versions of its own, so it lives in a virtualenv of
its own, never Tristate's: ``tools/run-tests.sh`` and ``tools/tempest.sh``
make one (``keystone`` and ``gunicorn``, pinned in ``tools/cached-venv.sh``,
kept in ``~/.cache/tristate/keystone-venv``) and export its path as
``TRISTATE_TEST_KEYSTONE``. Without it the tests that need Keystone are
skipped, or fail when ``CI=true``: CI must run them.

The set-up is the smallest a real cloud would recognise:

* SQLite (``[database] connection``), migrated by ``keystone-manage
  db_sync``; Fernet tokens and credentials, their keys made by
  ``keystone-manage fernet_setup`` and ``credential_setup`` under the
  work directory;
* ``keystone-manage bootstrap``: the ``admin`` user, project and role,
  ``member`` and ``reader`` roles, and the identity endpoints in
  ``RegionOne``, at the URL of the socket bound first (port 0, handed to
  gunicorn as ``fd://N``: no port race);
* then, through Keystone's own API: a ``member`` project and user (role
  ``member``), a ``service`` project with the user a Tristate API tier
  checks tokens with (:meth:`Keystone.authtoken_options`; roles
  ``service`` and ``admin``), and, for a Tristate plane,
  :meth:`Keystone.register_plane`: the ``compute`` and ``image`` services
  with public, internal and admin endpoints (:class:`TristateAll` starts
  such a plane and registers it);
* the WSGI app ``keystone.wsgi.api:application`` under gunicorn (through
  a shim, :data:`WSGI_SHIM`).

A Keystone answers a few seconds after its start on this machine (the
migrations take most of it), so fixtures start one per module
(:func:`fixture`); tests keep apart by the projects and users they make.
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib

import pytest
import requests

from bench import services

KEYSTONE_ENV = 'TRISTATE_TEST_KEYSTONE'
REGION = 'RegionOne'
DOMAIN = 'Default'
ADMIN = 'admin'
MEMBER = 'member'
SERVICE_PROJECT = 'service'
SERVICE_USER = 'tristate'
INTERFACES = ('public', 'internal', 'admin')
START_TIMEOUT = 180     # seconds; a loaded 2-core machine takes ~20
POLL = 0.1
STOP_TIMEOUT = 30
HTTP_TIMEOUT = 30
# Keystone's WSGI module parses the process's command line with oslo.config
# (keystone.server.configure), which gunicorn's options fail: this shim,
# written to the work directory, empties it first.
WSGI_SHIM = 'tristate_keystone_wsgi'
_SHIM_SOURCE = '''\
import sys

sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa: E402,F401
'''


def require_venv():
    """The Keystone virtualenv of ``TRISTATE_TEST_KEYSTONE``; skips (fails
    in CI) when it is not set or lacks what the tests run."""
    venv = os.environ.get(KEYSTONE_ENV)
    if venv:
        missing = [name for name in ('gunicorn', 'keystone-manage')
                   if not os.access(os.path.join(venv, 'bin', name),
                                    os.X_OK)]
        if not missing:
            return venv
        reason = '%s=%s has no bin/%s' % (KEYSTONE_ENV, venv,
                                          ' nor bin/'.join(missing))
    else:
        reason = ('%s is not set, so the tests against a real Keystone '
                  'cannot run (tools/run-tests.sh makes a virtualenv with '
                  'keystone and gunicorn and sets it)' % KEYSTONE_ENV)
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs a real Keystone: ' + reason, pytrace=False)
    pytest.skip(reason)


def _password():
    return uuidlib.uuid4().hex


class Keystone:
    """One Keystone process of the virtualenv ``venv``, its config, keys,
    database and log under ``workdir``. After :meth:`start`: ``url`` (the
    base, ``/v3`` under it), ``passwords`` (user name to password) and
    ``ids`` (``project:NAME``, ``user:NAME``, ``role:NAME`` to ids)."""

    def __init__(self, venv, workdir):
        self.venv = venv
        self.workdir = workdir
        self.log = os.path.join(workdir, 'keystone.log')
        self.conf = os.path.join(workdir, 'keystone.conf')
        self.proc = None
        self.url = None
        self.passwords = {ADMIN: _password(), MEMBER: _password(),
                          SERVICE_USER: _password()}
        self.ids = {}
        self.startup_seconds = None     # from the first keystone-manage
        self._admin_token = None

    @property
    def auth_url(self):
        """The identity v3 endpoint (``auth_url`` of clients)."""
        return self.url + '/v3'

    def _write_config(self):
        keys = {name: os.path.join(self.workdir, name)
                for name in ('fernet-keys', 'credential-keys',
                             'receipt-keys')}
        for path in keys.values():
            os.makedirs(path, mode=0o700)
        sections = {
            'DEFAULT': {'use_stderr': 'true'},
            'database': {'connection': 'sqlite:///' + os.path.join(
                self.workdir, 'keystone.sqlite')},
            # bcrypt's fewest rounds: Keystone's default (12) costs ~3 s
            # a password on a loaded 2-core machine, and Tempest makes and
            # logs in users by the hundred. Test passwords only.
            'identity': {'password_hash_rounds': '4'},
            'token': {'provider': 'fernet', 'expiration': '14400'},
            'fernet_tokens': {'key_repository': keys['fernet-keys']},
            'fernet_receipts': {'key_repository': keys['receipt-keys']},
            'credential': {'key_repository': keys['credential-keys']},
            # Keystone's own cache, in memory: one gunicorn worker process,
            # so nothing cached is ever stale. Without it a request costs
            # ~1.5 s on a loaded 2-core machine, ~0.1 s with it.
            'cache': {'enabled': 'true',
                      'backend': 'dogpile.cache.memory'},
        }
        with open(self.conf, 'w') as out:
            out.write(services.ini(sections))
        with open(os.path.join(self.workdir, WSGI_SHIM + '.py'), 'w') as out:
            out.write(_SHIM_SOURCE)

    def _manage(self, *args, timeout):
        argv = [os.path.join(self.venv, 'bin', 'keystone-manage'),
                '--config-file', self.conf] + list(args)
        with open(self.log, 'ab') as out:
            done = subprocess.run(argv, cwd=self.workdir,
                                  stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout,
                                  check=False)
        assert done.returncode == 0, 'keystone-manage %s failed:\n%s' % (
            args[0], self.log_tail())

    def start(self, timeout=START_TIMEOUT):
        """Write the config, migrate, make the keys, bootstrap, start
        gunicorn and make the member and service users; returns once
        Keystone answers (AssertionError with the log's tail if it does
        not within ``timeout`` seconds)."""
        began = time.monotonic()
        self._write_config()
        owner = ['--keystone-user', str(os.getuid()),
                 '--keystone-group', str(os.getgid())]
        listener = socket.socket()
        listener.bind(('127.0.0.1', 0))
        listener.listen(64)
        with listener:
            self.url = 'http://127.0.0.1:%d' % listener.getsockname()[1]
            self._manage('db_sync', timeout=timeout)
            self._manage('fernet_setup', *owner, timeout=timeout)
            self._manage('credential_setup', *owner, timeout=timeout)
            self._manage('bootstrap',
                         '--bootstrap-password', self.passwords[ADMIN],
                         '--bootstrap-region-id', REGION,
                         '--bootstrap-admin-url', self.auth_url,
                         '--bootstrap-internal-url', self.auth_url,
                         '--bootstrap-public-url', self.auth_url,
                         timeout=timeout)
            env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=self.conf)
            with open(self.log, 'ab') as out:
                self.proc = subprocess.Popen(
                    [os.path.join(self.venv, 'bin', 'gunicorn'),
                     '--bind', 'fd://%d' % listener.fileno(),
                     # One request at a time: concurrent writes to SQLite
                     # fail "database is locked" (Keystone answers 500).
                     '--workers', '1', '--threads', '1', '--timeout', '120',
                     '--access-logfile', '-', '--pythonpath', self.workdir,
                     WSGI_SHIM + ':application'],
                    cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                    stdout=out, stderr=subprocess.STDOUT,
                    pass_fds=(listener.fileno(),), start_new_session=True)
        self._wait_ready(began + timeout)
        self.startup_seconds = time.monotonic() - began
        self._make_users()
        return self

    def _wait_ready(self, deadline):
        while True:
            with contextlib.suppress(requests.RequestException):
                if requests.get(self.auth_url,
                                timeout=5).status_code == 200:
                    return
            if self.proc.poll() is not None:
                raise AssertionError('Keystone exited with %s before it '
                                     'answered:\n%s' % (self.proc.returncode,
                                                        self.log_tail()))
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError('Keystone did not answer %s within the '
                                     'start timeout:\n%s'
                                     % (self.auth_url, self.log_tail()))
            time.sleep(POLL)

    def stop(self):
        """SIGTERM to gunicorn's master (it stops its workers), SIGKILL to
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

    def log_tail(self, lines=40):
        with contextlib.suppress(OSError), open(self.log, errors='replace') \
                as log:
            return ''.join(log.readlines()[-lines:])
        return '(no log)'

    # -- Keystone's API, as an admin -------------------------------------

    def token(self, user=ADMIN, project=None):
        """A token of ``user`` (one of :attr:`passwords`) scoped to
        ``project`` (default: the project of the same name, ``service``
        for the service user)."""
        if project is None:
            project = SERVICE_PROJECT if user == SERVICE_USER else user
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': user, 'domain': {'name': DOMAIN},
                'password': self.passwords[user]}}},
            'scope': {'project': {'name': project,
                                  'domain': {'name': DOMAIN}}}}}
        answer = requests.post(self.auth_url + '/auth/tokens', json=body,
                               timeout=HTTP_TIMEOUT)
        assert answer.status_code == 201, 'token of %s: %s %s' % (
            user, answer.status_code, answer.text)
        return answer.headers['X-Subject-Token']

    def _call(self, method, path, body=None, expect=(200, 201, 204)):
        if self._admin_token is None:
            self._admin_token = self.token(ADMIN)
        answer = requests.request(
            method, self.auth_url + path, json=body, timeout=HTTP_TIMEOUT,
            headers={'X-Auth-Token': self._admin_token})
        assert answer.status_code in expect, '%s %s: %s %s' % (
            method, path, answer.status_code, answer.text)
        return answer.json() if answer.content else {}

    def _find(self, kind, name):
        """The id of the ``kind`` (projects, users, roles) named
        ``name``, or None."""
        found = self._call('GET', '/%s?name=%s' % (kind, name))[kind]
        return found[0]['id'] if found else None

    def ensure_role(self, name):
        role = self._find('roles', name) or self._call(
            'POST', '/roles', {'role': {'name': name}})['role']['id']
        self.ids['role:' + name] = role
        return role

    def ensure_project(self, name):
        project = self._find('projects', name) or self._call(
            'POST', '/projects', {'project': {
                'name': name, 'domain_id': 'default',
                'description': 'made by the tests'}})['project']['id']
        self.ids['project:' + name] = project
        return project

    def add_user(self, name, project, roles, password=None):
        """A user ``name`` with ``roles`` on ``project`` (made if
        missing); returns its id. Its password goes to
        :attr:`passwords`."""
        password = password or self.passwords.get(name) or _password()
        self.passwords[name] = password
        project_id = self.ensure_project(project)
        user = self._call('POST', '/users', {'user': {
            'name': name, 'domain_id': 'default', 'password': password,
            'default_project_id': project_id}})['user']['id']
        for role in roles:
            self._call('PUT', '/projects/%s/users/%s/roles/%s' % (
                project_id, user, self.ensure_role(role)))
        self.ids['user:' + name] = user
        return user

    def _make_users(self):
        self.ids['project:' + ADMIN] = self._find('projects', ADMIN)
        self.ids['user:' + ADMIN] = self._find('users', ADMIN)
        for role in (ADMIN, MEMBER, 'reader', 'service'):
            self.ensure_role(role)
        self.add_user(MEMBER, MEMBER, [MEMBER, 'reader'])
        self.add_user(SERVICE_USER, SERVICE_PROJECT, ['service', ADMIN])

    def add_service(self, kind, name, url):
        """A catalog entry: the service of type ``kind`` named ``name``,
        with its public, internal and admin endpoints at ``url`` in
        :data:`REGION`."""
        service = self._call('POST', '/services', {'service': {
            'type': kind, 'name': name, 'enabled': True}})['service']['id']
        for interface in INTERFACES:
            self._call('POST', '/endpoints', {'endpoint': {
                'service_id': service, 'interface': interface, 'url': url,
                'region_id': REGION, 'enabled': True}})
        return service

    def register_plane(self, api_url):
        """The catalog of a Tristate plane whose API answers at
        ``api_url`` (e.g. ``http://127.0.0.1:8774``): ``compute`` at
        ``/v2.1`` and its image API (Glance v2) as ``image`` at
        ``/image``."""
        api_url = api_url.rstrip('/')
        self.add_service('compute', 'nova', api_url + '/v2.1')
        self.add_service('image', 'glance', api_url + '/image')

    def authtoken_options(self):
        """``[keystone_authtoken]`` of a Tristate API tier that checks
        tokens against this Keystone as the service user."""
        return {
            'auth_type': 'password', 'auth_url': self.auth_url,
            'www_authenticate_uri': self.auth_url,
            'username': SERVICE_USER,
            'password': self.passwords[SERVICE_USER],
            'project_name': SERVICE_PROJECT,
            'user_domain_name': DOMAIN, 'project_domain_name': DOMAIN,
            'region_name': REGION,
        }

    def openrc(self, user=ADMIN, project=None):
        """The ``OS_*`` variables of ``user`` (openstackclient's)."""
        return {
            'OS_AUTH_URL': self.auth_url, 'OS_IDENTITY_API_VERSION': '3',
            'OS_USERNAME': user, 'OS_PASSWORD': self.passwords[user],
            'OS_PROJECT_NAME': project or (
                SERVICE_PROJECT if user == SERVICE_USER else user),
            'OS_USER_DOMAIN_NAME': DOMAIN, 'OS_PROJECT_DOMAIN_NAME': DOMAIN,
            'OS_REGION_NAME': REGION,
        }


def _free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class TristateAll:
    """``tristate-all`` (fake driver, ``hosts`` hosts) as a process of
    the calling virtualenv, its API (``url``) behind ``keystone``:
    ``[api] auth_strategy = keystone``, tokens checked as the service user,
    and its compute and image APIs in the catalog
    (:meth:`Keystone.register_plane`). ``sections``: more config, e.g.
    ``{'quota': {'instances': '10'}}``. Config, state and log under
    ``workdir``."""

    def __init__(self, workdir, keystone, *, hosts=2, sections=None):
        self.workdir = workdir
        self.keystone = keystone
        self.hosts = hosts
        self.sections = sections or {}
        self.url = 'http://127.0.0.1:%d' % _free_port()
        self.log = os.path.join(workdir, 'tristate-all.log')
        self.proc = None

    def _write_config(self):
        path = os.path.join(self.workdir, 'tristate.conf')
        sections = {'api': {'auth_strategy': 'keystone'},
                    'keystone_authtoken': self.keystone.authtoken_options()}
        for name, values in self.sections.items():
            sections.setdefault(name, {}).update(values)
        with open(path, 'w') as out:
            out.write(services.ini(sections))
        return path

    def start(self, timeout=START_TIMEOUT):
        """Start it, wait until it answers, register it in the catalog;
        AssertionError with the log's tail if it does not answer within
        ``timeout`` seconds."""
        argv = [os.path.join(os.path.dirname(sys.executable),
                             'tristate-all'),
                '--config-file', self._write_config(),
                '--hosts', str(self.hosts),
                '--state-dir', os.path.join(self.workdir, 'state'),
                '--api-port', self.url.rsplit(':', 1)[1]]
        with open(self.log, 'ab') as out:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError('tristate-all did not answer %s:\n%s'
                                     % (self.url, self.log_tail()))
            time.sleep(POLL)
        self.keystone.register_plane(self.url)
        return self

    def _answers(self):
        with contextlib.suppress(requests.RequestException):
            return requests.get(self.url + '/', timeout=5).ok
        return False

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=STOP_TIMEOUT * 2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def log_tail(self, lines=40):
        with contextlib.suppress(OSError), open(self.log, errors='replace') \
                as log:
            return ''.join(log.readlines()[-lines:])
        return '(no log)'

    def flavors(self, token):
        """The flavors, smallest first, as the compute API lists them."""
        answer = requests.get(self.url + '/v2.1/flavors/detail',
                              headers={'X-Auth-Token': token},
                              timeout=HTTP_TIMEOUT)
        answer.raise_for_status()
        return sorted(answer.json()['flavors'],
                      key=lambda f: (f['ram'], f['vcpus'], f['disk']))


@contextlib.contextmanager
def running(venv=None):
    """A started :class:`Keystone`, stopped and its files removed after.
    ``venv``: the Keystone virtualenv (default: :func:`require_venv`)."""
    venv = venv or require_venv()
    workdir = tempfile.mkdtemp(prefix='tristate-keystone-')
    keystone = Keystone(venv, workdir)
    try:
        yield keystone.start()
    finally:
        keystone.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def fixture():
    """A module-scoped pytest fixture yielding a running :class:`Keystone`.
    Bind it to a name in a test module: ``keystone =
    keystone_support.fixture()``."""
    @pytest.fixture(scope='module')
    def _keystone():
        with running() as keystone:
            yield keystone
    return _keystone
