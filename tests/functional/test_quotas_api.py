"""Quotas and usage through the API and the whole plane: os-quota-sets
(admin sets, a project reads its own), 403 over quota, a hard delete frees
quota with the agent stopped, os-simple-tenant-usage and its dates."""

import pytest

from common import version
from common.db import services
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import wait_heartbeat
from tests.functional.conftest import wait_idle
from tests.unit.db.test_concurrency import _race


@pytest.fixture
def admin(app):
    return Api(app, token=api_support.ADMIN_TOKEN)


@pytest.fixture
def member(app):
    return Api(app, token=api_support.new_project())


def _project(api):
    return api.token.split(':')[1]


def _set(admin, project, **limits):
    resp = admin.put('/os-quota-sets/%s' % project, {'quota_set': limits})
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()['quota_set']


def test_admin_sets_and_member_reads_its_own(admin, member):
    project = _project(member)
    assert _set(admin, project, instances=3, cores='4')['instances'] == 3
    resp = member.get('/os-quota-sets/%s' % project)
    assert resp.status_code == 200
    body = resp.get_json()['quota_set']
    assert (body['id'], body['instances'], body['cores']) == (project, 3, 4)
    defaults = member.get('/os-quota-sets/%s/defaults' % project).get_json()
    assert defaults['quota_set']['instances'] != 3


def test_member_may_not_set_nor_read_others(admin, member, app):
    project = _project(member)
    resp = member.put('/os-quota-sets/%s' % project,
                      {'quota_set': {'instances': 100}})
    assert resp.status_code == 403, resp.get_json()
    other = Api(app, token=api_support.new_project())
    assert other.get('/os-quota-sets/%s' % project).status_code == 403


@pytest.mark.parametrize('body, field', [
    ({'quota_set': {'instances': -2}}, 'instances'),
    ({'quota_set': {'cores': 'lots'}}, 'cores'),
    ({'quota_set': {'gpus': 1}}, 'gpus'),
    ({'quotas': {}}, 'quota_set'),
])
def test_bad_quota_set_is_400_naming_the_field(admin, member, body, field):
    resp = admin.put('/os-quota-sets/%s' % _project(member), body)
    assert resp.status_code == 400, resp.get_json()
    assert field in message(resp)


def test_over_quota_is_403_and_delete_frees_with_agent_stopped(
        plane, admin, member):
    _set(admin, _project(member), instances=1)
    first = member.active('one')
    resp = member.post('/servers', {'server': {
        'name': 'two', 'flavorRef': 'tiny', 'imageRef': api_support.IMAGE}})
    assert resp.status_code == 403, resp.get_json()
    assert 'instances' in message(resp) and 'of 1' in message(resp)
    host = member.host(first['id'])
    plane.stop_agent(host)
    assert member.delete('/servers/%s' % first['id']).status_code == 204
    detail = member.get('/os-quota-sets/%s/detail' % _project(member))
    assert detail.get_json()['quota_set']['instances']['in_use'] == 0
    # the scheduler may pick the stopped host until it misses heartbeats:
    # bring it back to see the freed quota used
    plane.start_agent(host)
    assert member.active('two')['status'] == 'ACTIVE'


def test_usage_reports_the_project(admin, member):
    server = member.active()
    project = _project(member)
    start = '2000-01-01T00:00:00'
    resp = member.get('/os-simple-tenant-usage/%s?start=%s' % (project,
                                                                start))
    assert resp.status_code == 200, resp.get_json()
    usage = resp.get_json()['tenant_usage']
    assert usage['tenant_id'] == project
    assert [s['instance_id'] for s in usage['server_usages']] == [server['id']]
    everyone = admin.get('/os-simple-tenant-usage?start=%s&detailed=1'
                         % start).get_json()['tenant_usages']
    assert project in {t['tenant_id'] for t in everyone}
    assert member.get('/os-simple-tenant-usage').status_code == 403


@pytest.mark.parametrize('query, name', [('start=yesterday', 'start'),
                                         ('end=2026-13-01T00:00:00', 'end')])
def test_usage_bad_dates_are_400(admin, query, name):
    resp = admin.get('/os-simple-tenant-usage?%s' % query)
    assert resp.status_code == 400
    assert name in message(resp) and 'YYYY-MM-DDTHH:MM:SS' in message(resp)


def test_services_report_their_version(plane):
    wait_heartbeat(plane, 'host1')
    rows = {(s['binary'], s['host']): s for s in plane.statedb.list_services()}
    running = version.package_version()
    assert rows[(services.CONDUCTOR, 'conductor')]['version'] == running
    assert rows[(services.AGENT, 'host1')]['version'] == running


def test_concurrent_builds_through_the_conductor(conf, make_plane, ctx):
    """30 builds at once against a limit of 10: exactly 10 accepted (and
    built), 20 answered 403, whatever the interleaving."""
    builds, limit = 30, 10
    conf.set_override('instances', limit, group='quota')
    plane = make_plane(hosts=2)
    outcomes = _race(builds, lambda i: plane.client.create_instance(
        ctx, name='vm%d' % i, flavor='tiny', image_ref=api_support.IMAGE))
    accepted = [v for kind, v in outcomes if kind == 'ok']
    refused = [v for kind, v in outcomes if kind == 'err']
    assert len(accepted) == limit
    assert [e.code for e in refused] == [403] * (builds - limit), refused
    for inst in accepted:
        assert wait_idle(plane, inst['uuid'])['vm_state'] == 'active'
    assert len(plane.statedb.list_instances(project_id=ctx.project_id)) \
        == limit
