"""Who may do what through the API: a project sees and acts on its own
servers only; admin-only actions, every project's list and the hosts need
admin; an operator's policy file overrides the defaults in code."""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def owner(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture
def stranger(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture
def admin(app):
    return Api(app, token=api_support.ADMIN_TOKEN)


def _state(api, server_id):
    server = api.server(server_id)
    log = api.get('/servers/%s/os-instance-actions'
                  % server_id).get_json()['instanceActions']
    return (server['status'], server['OS-EXT-STS:task_state'],
            server['metadata'], len(log))


@pytest.mark.parametrize('method, path, body', [
    ('GET', '/servers/%s', None),
    ('DELETE', '/servers/%s', None),
    ('POST', '/servers/%s/action', {'os-stop': None}),
    ('POST', '/servers/%s/action', {'reboot': {'type': 'HARD'}}),
    ('POST', '/servers/%s/action', {'resize': {'flavorRef': 'small'}}),
    ('POST', '/servers/%s/action', {'forceDelete': None}),
    ('GET', '/servers/%s/os-instance-actions', None),
    ('GET', '/servers/%s/metadata', None),
    ('PUT', '/servers/%s/metadata/tristate:crash',
     {'meta': {'tristate:crash': 'stop'}}),
    ('POST', '/servers/%s/metadata', {'metadata': {'tristate:crash': 'stop'}}),
])
def test_another_project_cannot_see_or_touch_a_server(owner, stranger, method,
                                                      path, body):
    server = owner.active()
    before = _state(owner, server['id'])
    resp = stranger.request(method, path % server['id'], json=body)
    assert resp.status_code == 404, resp.get_json()
    assert _state(owner, server['id']) == before


def test_lists_show_the_own_project_only(owner, stranger, admin):
    mine = owner.active()
    assert stranger.ids('/servers') == []
    assert stranger.ids('/servers/detail') == []
    assert owner.ids('/servers') == [mine['id']]
    # an admin lists its own project unless it asks for all of them
    assert mine['id'] not in admin.ids('/servers')
    everyone = admin.ids('/servers/detail',
                         query_string={'all_tenants': '1'})
    assert mine['id'] in everyone
    assert mine['id'] not in admin.ids('/servers',
                                       query_string={'all_tenants': '0'})


def test_admin_acts_on_every_project(owner, admin):
    server = owner.active()
    assert admin.server(server['id'])['tenant_id'] == server['tenant_id']
    after = admin.act(server['id'], {'os-stop': None})
    assert after['status'] == 'SHUTOFF'
    assert admin.delete('/servers/%s' % server['id']).status_code == 204


@pytest.mark.parametrize('body, rule', [
    ({'os-resetState': {'state': 'error'}}, 'reset_state'),
    ({'os-migrateLive': {'host': None}}, 'live_migrate'),
])
def test_admin_only_actions_are_403_for_the_owner(owner, body, rule):
    server = owner.active()
    before = _state(owner, server['id'])
    resp = owner.post('/servers/%s/action' % server['id'], body)
    assert resp.status_code == 403
    assert 'tristate:servers:action:%s' % rule in message(resp)
    assert 'forbidden' in resp.get_json()
    assert _state(owner, server['id']) == before


def test_every_project_and_the_hosts_need_admin(owner):
    resp = owner.get('/servers', query_string={'all_tenants': 'true'})
    assert resp.status_code == 403
    assert owner.get('/os-hypervisors/detail').status_code == 403
    assert owner.get('/os-hypervisors').status_code == 403


def test_a_policy_file_overrides_the_defaults(make_plane, tmp_path):
    """An operator restricts; the conductor's own checks (ownership, the
    table's admin-only actions, host listing) still hold whatever it says."""
    from oslo_policy import opts as policy_opts
    plane = make_plane(hosts=1)
    rules = tmp_path / 'policy.yaml'
    rules.write_text('"tristate:flavors:index": "role:admin"\n'
                     '"tristate:servers:create": "role:admin"\n')
    for group, opts in policy_opts.list_opts():
        plane.conf.register_opts(opts, group=group)
    plane.conf.set_override('policy_file', str(rules), group='oslo_policy')
    app = api_support.make_app(plane)
    member = Api(app, token=api_support.new_project())
    assert member.get('/flavors').status_code == 403
    assert Api(app).get('/flavors').status_code == 200
    resp = member.post('/servers', {'server': {
        'name': 'x', 'flavorRef': 'tiny', 'imageRef': IMAGE}})
    assert resp.status_code == 403
    assert member.ids() == []
