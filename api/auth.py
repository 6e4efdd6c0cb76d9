"""Who is asking: WSGI middleware that puts a RequestContext in the
request's environ (``tristate.context``), chosen by ``[api] auth_strategy``.

* ``noauth`` (Nova's noauth2): ``X-Auth-Token: USER:PROJECT`` (or ``USER``,
  the project then being the same), admin when USER is ``admin``. No token:
  ``[api] noauth_default_user``/``noauth_default_project``, or 401 when
  those are empty (keystoneauth's placeholder token ``notused``, which
  openstacksdk's ``auth_type: none`` sends, counts as no token). For
  tristate-all, tests and trusted networks only.
* ``keystone``: keystonemiddleware's ``auth_token`` checks the token
  (``[keystone_authtoken]``) and sets the X-User-Id, X-Project-Id and
  X-Roles headers the context is built from. keystonemiddleware is an
  optional dependency (``pip install tristate[keystone]``).

Version discovery (``/``, ``/v2`` and ``/v2.1``) needs no authentication, as in Nova.
"""

import re

from api import faults
from common import context as tcontext

ENV_CONTEXT = 'tristate.context'
OPEN_PATHS = frozenset({'', '/', '/v2', '/v2/', '/v2.1', '/v2.1/'})
ADMIN_USER = 'admin'
# keystoneauth's "none" plugin (openstacksdk's auth_type none) sends this
# token; it means "no token", so it gets the default user too.
PLACEHOLDER_TOKENS = frozenset({'notused'})
_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]')


def _roles(is_admin):
    return ['admin', 'member', 'reader'] if is_admin else ['member', 'reader']


def _with_context(app, ctx, environ, start_response):
    environ[ENV_CONTEXT] = ctx
    ctx.update_store()          # this thread's log lines carry its ids
    return app(environ, start_response)


class NoAuth:
    """Trusts X-Auth-Token ``USER:PROJECT`` as it is."""

    def __init__(self, app, conf):
        self.app = app
        self.default_user = conf.api.noauth_default_user
        self.default_project = (conf.api.noauth_default_project
                                or self.default_user)

    def __call__(self, environ, start_response):
        token = environ.get('HTTP_X_AUTH_TOKEN', '').strip()
        if _CONTROL.search(token):
            # User and project ids are stored and logged: no NUL (which
            # PostgreSQL refuses) nor any other control character.
            return faults.wsgi_response(
                start_response, 401, 'Invalid X-Auth-Token: USER:PROJECT '
                'must be printable text (noauth)',
                [('WWW-Authenticate', 'Token')])
        if token and token not in PLACEHOLDER_TOKENS:
            user, _, project = token.partition(':')
            project = project or user
        elif self.default_user:
            user, project = self.default_user, self.default_project
        else:
            return faults.wsgi_response(
                start_response, 401,
                'Authentication required: send X-Auth-Token USER:PROJECT '
                '(noauth)', [('WWW-Authenticate', 'Token')])
        is_admin = user == ADMIN_USER
        ctx = tcontext.RequestContext(
            user_id=user, project_id=project, user_name=user,
            project_name=project, is_admin=is_admin, roles=_roles(is_admin))
        return _with_context(self.app, ctx, environ, start_response)


class KeystoneContext:
    """Builds the context from the headers keystonemiddleware set."""

    def __init__(self, app, admin_role='admin'):
        self.app = app
        self.admin_role = admin_role

    def __call__(self, environ, start_response):
        if environ.get('HTTP_X_IDENTITY_STATUS') != 'Confirmed':
            return faults.wsgi_response(
                start_response, 401, 'Authentication required: the token is '
                'missing, invalid or expired', [('WWW-Authenticate', 'Token')])
        ctx = tcontext.RequestContext.from_environ(environ)
        ctx.is_admin = self.admin_role in (ctx.roles or [])
        return _with_context(self.app, ctx, environ, start_response)


def keystone(app, conf):
    try:
        from keystonemiddleware import auth_token
    except ImportError as err:
        raise RuntimeError(
            '[api] auth_strategy = keystone needs keystonemiddleware '
            '(pip install keystonemiddleware), or set auth_strategy = noauth '
            'on a trusted network: %s' % err) from None
    return auth_token.AuthProtocol(KeystoneContext(app),
                                   {'oslo_config_config': conf})


class OpenVersions:
    """Sends version discovery (``open_paths``) and requests that carry
    the environ key ``open_environ`` (the image API's grants, checked by
    that API) past authentication, the rest through it."""

    def __init__(self, app, authenticated, open_paths=OPEN_PATHS,
                 open_environ=None):
        self.app = app
        self.authenticated = authenticated
        self.open_paths = open_paths
        self.open_environ = open_environ

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') in self.open_paths or (
                self.open_environ and environ.get(self.open_environ)):
            return self.app(environ, start_response)
        return self.authenticated(environ, start_response)


def wrap(app, conf, open_paths=OPEN_PATHS, open_environ=None):
    """``app`` behind the authentication ``[api] auth_strategy`` names
    (the compute, image and reservation APIs each with its own open
    paths)."""
    if conf.api.auth_strategy == 'noauth':
        authenticated = NoAuth(app, conf)
    else:
        authenticated = keystone(app, conf)
    return OpenVersions(app, authenticated, open_paths, open_environ)
