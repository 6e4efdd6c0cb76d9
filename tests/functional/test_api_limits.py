"""``/limits`` and ``os-quota-class-sets`` through python-novaclient over
real HTTP: a project's limits and what it uses, Nova's keys per
microversion, the default quota class as every project's defaults;
negative cases as Nova answers them; bodies checked against Tempest's
schemas."""

import pytest
from novaclient import exceptions as nova_exc
from tempest.lib.services.compute import limits_client
from tempest.lib.services.compute import quota_classes_client

from tests.functional import api_support
from tests.functional import catalogue_support as support
from tests.functional.api_support import Api
from tests.functional.api_support import message

# the catalogue tests' shared fixtures
admin_api = support.admin_api
member_token = support.member_token
plane = support.plane
url = support.url


def _project(token):
    return token.split(':')[1]


def _absolute(client):
    return {a.name: a.value for a in client.limits.get().absolute}


def test_limits_show_the_quota_and_what_the_project_uses(
        url, app, member_token, admin_api):
    project = _project(member_token)
    resp = admin_api.put('/os-quota-sets/%s' % project,
                         {'quota_set': {'instances': 4, 'cores': 9}})
    assert resp.status_code == 200, resp.get_json()
    member = support.nova(url, member_token)
    before = _absolute(member)
    assert (before['maxTotalInstances'], before['maxTotalCores'],
            before['totalInstancesUsed'], before['totalCoresUsed']) == (
                4, 9, 0, 0)
    server = Api(app, token=member_token).active(flavor='small')
    after = _absolute(member)
    assert (after['totalInstancesUsed'], after['totalCoresUsed'],
            after['totalRAMUsed']) == (1, 1, 2048)
    admin = support.nova(url, api_support.ADMIN_TOKEN)
    other = {a.name: a.value for a in admin.limits.get(
        tenant_id=project).absolute}
    assert other['totalInstancesUsed'] == 1
    Api(app, token=member_token).delete('/servers/%s' % server['id'])


@pytest.mark.parametrize('version, gone, kept', [
    ('2.1', (), ('maxSecurityGroups', 'maxImageMeta', 'maxPersonality',
                 'totalFloatingIpsUsed')),
    ('2.36', ('maxSecurityGroups', 'maxTotalFloatingIps',
              'totalSecurityGroupsUsed'), ('maxImageMeta', 'maxPersonality')),
    ('2.39', ('maxImageMeta',), ('maxPersonality',)),
    ('2.57', ('maxPersonality', 'maxPersonalitySize', 'maxImageMeta'),
     ('maxServerMeta', 'maxServerGroups')),
])
def test_limits_keys_per_microversion(url, member_token, version, gone,
                                      kept):
    absolute = _absolute(support.nova(url, member_token, version))
    assert not set(gone) & set(absolute)
    assert set(kept) <= set(absolute)
    assert 'tristate:maxTotalDisk' not in absolute


def test_limits_of_another_project_need_an_admin(app, member_token):
    member = Api(app, token=member_token)
    resp = member.get('/limits?tenant_id=%s' % _project(member_token))
    assert resp.status_code == 403
    assert member.get('/limits?colour=red', version='2.74').status_code == 200
    strict = member.get('/limits?colour=red', version='2.75')
    assert strict.status_code == 400 and 'colour' in message(strict)
    latest = member.get('/limits', version='2.101').get_json()
    assert 'tristate:maxTotalDisk' in latest['limits']['absolute']


def test_default_quota_class_is_every_projects_default(
        url, app, member_token, admin_api):
    admin = support.nova(url, api_support.ADMIN_TOKEN)
    before = admin.quota_classes.get('default')
    try:
        admin.quota_classes.update('default', instances=7, key_pairs=50)
        shown = admin.quota_classes.get('default')
        assert (shown.instances, shown.key_pairs) == (7, 50)
        member = Api(app, token=member_token)
        defaults = member.get('/os-quota-sets/%s/defaults'
                              % _project(member_token)).get_json()
        assert defaults['quota_set']['instances'] == 7
        absolute = _absolute(support.nova(url, member_token))
        assert (absolute['maxTotalInstances'],
                absolute['maxTotalKeypairs']) == (7, 50)
    finally:
        admin.quota_classes.update('default', instances=before.instances,
                                   key_pairs=before.key_pairs)


def test_quota_classes_are_admin_only_and_checked(app, admin_api):
    member = Api(app, token=api_support.new_project())
    assert member.get('/os-quota-class-sets/default').status_code == 403
    assert member.put('/os-quota-class-sets/default', {
        'quota_class_set': {'instances': 1}}).status_code == 403
    for body, field in (({'quota_class_set': {'instances': -2}}, 'instances'),
                        ({'quota_class_set': {'gpus': 1}}, 'gpus'),
                        ({'quota_class_set': {'disk': 1}}, 'disk')):
        resp = admin_api.put('/os-quota-class-sets/other', body,
                             version='2.1')
        assert resp.status_code == 400, resp.get_json()
        assert field in message(resp)
    # Tristate's own quotas from its own microversion on
    resp = admin_api.put('/os-quota-class-sets/other', {
        'quota_class_set': {'disk': 100}}, version='2.101')
    assert resp.status_code == 200 and resp.get_json()[
        'quota_class_set']['disk'] == 100
    assert 'id' not in resp.get_json()['quota_class_set']


def test_quota_class_keys_per_microversion(url, admin_api):
    admin = support.nova(url, api_support.ADMIN_TOKEN, '2.50')
    shown = admin.quota_classes.get('spare')
    assert shown.server_groups == 10 and not hasattr(shown, 'floating_ips')
    # the network proxies' quotas are gone from 2.50, as in Nova
    resp = admin_api.put('/os-quota-class-sets/spare', {
        'quota_class_set': {'floating_ips': 3}}, version='2.50')
    assert resp.status_code == 400 and 'floating_ips' in message(resp)
    old = support.nova(url, api_support.ADMIN_TOKEN, '2.1')
    assert old.quota_classes.get('spare').floating_ips == 10
    with pytest.raises(nova_exc.Forbidden):
        support.nova(url, api_support.new_project()).quota_classes.get(
            'default')


@pytest.mark.parametrize('version', ['2.1', '2.36', '2.39', '2.50', '2.57',
                                     '2.100'])
def test_bodies_match_tempest_schemas(app, admin_api, version):
    member = Api(app, token=api_support.new_project(), version=version)
    support.check(support.tempest_schema(
        limits_client.LimitsClient, 'get_limit', version),
        member.get('/limits'))
    klass = quota_classes_client.QuotaClassesClient
    support.check(support.tempest_schema(klass, 'get_quota_class_set',
                                         version),
                  admin_api.get('/os-quota-class-sets/spare',
                                version=version))
    support.check(support.tempest_schema(klass, 'update_quota_class_set',
                                         version),
                  admin_api.put('/os-quota-class-sets/spare', {
                      'quota_class_set': {'instances': 11}},
                      version=version))
