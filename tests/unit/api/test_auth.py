"""Who is asking: noauth tokens, the default user, keystone's headers."""

import types

import pytest
from werkzeug import test as wtest

from api import auth


def _conf(user='', project='', strategy='noauth'):
    return types.SimpleNamespace(api=types.SimpleNamespace(
        noauth_default_user=user, noauth_default_project=project,
        auth_strategy=strategy))


def _seen_by(middleware_factory, headers, path='/v2.1/servers'):
    seen = {}

    def app(environ, start_response):
        seen['ctx'] = environ.get(auth.ENV_CONTEXT)
        start_response('200 OK', [('Content-Type', 'text/plain')])
        return [b'ok']
    client = wtest.Client(middleware_factory(app))
    resp = client.get(path, headers=headers)
    return resp, seen.get('ctx')


@pytest.mark.parametrize('token, user, project, admin', [
    ('alice:p1', 'alice', 'p1', False),
    ('bob', 'bob', 'bob', False),
    ('admin:ops', 'admin', 'ops', True),
    ('admin', 'admin', 'admin', True),
])
def test_noauth_tokens(token, user, project, admin):
    resp, ctx = _seen_by(lambda app: auth.NoAuth(app, _conf()),
                         {'X-Auth-Token': token})
    assert resp.status_code == 200
    assert (ctx.user_id, ctx.project_id, ctx.is_admin) == (user, project,
                                                           admin)
    assert ('admin' in ctx.roles) == admin
    assert ctx.request_id.startswith('req-')


@pytest.mark.parametrize('headers', [{}, {'X-Auth-Token': 'notused'}])
def test_no_token_is_the_default_user(headers):
    resp, ctx = _seen_by(lambda app: auth.NoAuth(app, _conf('admin')),
                         headers)
    assert (ctx.user_id, ctx.project_id, ctx.is_admin) == ('admin', 'admin',
                                                           True)
    resp, ctx = _seen_by(lambda app: auth.NoAuth(app, _conf('demo', 'p')),
                         headers)
    assert (ctx.user_id, ctx.project_id, ctx.is_admin) == ('demo', 'p', False)


def test_no_token_and_no_default_is_401():
    resp, ctx = _seen_by(lambda app: auth.NoAuth(app, _conf()), {})
    assert resp.status_code == 401
    assert ctx is None
    assert 'X-Auth-Token' in resp.get_json()['unauthorized']['message']


def test_version_discovery_skips_authentication():
    for path in ('/', '/v2.1', '/v2.1/'):
        resp, ctx = _seen_by(lambda app: auth.wrap(app, _conf()), {}, path)
        assert resp.status_code == 200 and ctx is None
    resp, _ctx = _seen_by(lambda app: auth.wrap(app, _conf()), {},
                          '/v2.1/flavors')
    assert resp.status_code == 401


def test_keystone_headers_make_the_context():
    headers = {'X-Identity-Status': 'Confirmed', 'X-User-Id': 'u1',
               'X-Project-Id': 'p1', 'X-Roles': 'member,reader'}
    resp, ctx = _seen_by(auth.KeystoneContext, headers)
    assert (ctx.user_id, ctx.project_id, ctx.is_admin) == ('u1', 'p1', False)
    headers['X-Roles'] = 'admin,member'
    _resp, ctx = _seen_by(auth.KeystoneContext, headers)
    assert ctx.is_admin
    resp, ctx = _seen_by(auth.KeystoneContext, {'X-Identity-Status': 'Invalid'})
    assert resp.status_code == 401 and ctx is None


def test_keystone_strategy_wraps_auth_token():
    auth_token = pytest.importorskip('keystonemiddleware.auth_token')
    from oslo_config import cfg
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    wrapped = auth.keystone(lambda e, s: [], conf)
    assert isinstance(wrapped, auth_token.AuthProtocol)
