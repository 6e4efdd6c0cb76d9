"""Issue 22's server features as the ecosystem's clients use them:
python-novaclient and openstacksdk in this process, over real HTTP, on a
shared two-host plane of fake hypervisors. Each test is a project of its
own (it sees only its own servers).

List filters (flavor, image, status, vm_state, deleted, changes-since,
name, tags, locked, sort, limit/marker), user metadata, tags, lock,
rebuild with name/metadata/description, min_count/max_count,
os-server-password and os-getConsoleOutput.
"""

import datetime

from novaclient import api_versions
from novaclient import exceptions as nova_exc
import pytest

from tests.functional import api_support
from tests.functional import client_support
from tests.functional import osc_support
from tests.functional.conftest import wait_for
from tests.images_support import IMAGE
from tests.images_support import IMAGES


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane, max_limit=3) as url:
        yield url


def _active(nova, server):
    def idle():
        found = nova.servers.get(server.id)
        return found.status == 'ACTIVE' and getattr(
            found, 'OS-EXT-STS:task_state') is None
    wait_for(idle, what='server %s ACTIVE' % server.id)
    return nova.servers.get(server.id)


def _boot(nova, name, flavor='tiny', **kwargs):
    if nova.api_version >= api_versions.APIVersion('2.37'):
        kwargs.setdefault('nics', 'none')   # required by novaclient
    return _active(nova, nova.servers.create(name, IMAGE, flavor, **kwargs))


def _user(url, version):
    return client_support.nova(url, api_support.new_project(), version)


def test_list_filters_through_novaclient(url):
    nova = _user(url, '2.83')
    tiny, small = _boot(nova, 'tiny1'), _boot(nova, 'small1', 'small')
    nova.servers.stop(tiny)
    wait_for(lambda: nova.servers.get(tiny.id).status == 'SHUTOFF',
             what='tiny1 stopped')

    def ids(**opts):
        return {s.id for s in nova.servers.list(search_opts=opts)}
    assert ids(flavor='small') == {small.id}
    assert ids(image=IMAGE) == {tiny.id, small.id}
    assert ids(image='other') == set()
    assert ids(status='SHUTOFF') == {tiny.id}
    assert ids(vm_state='stopped') == {tiny.id}
    assert ids(name='^small') == {small.id}
    assert ids(**{'changes-since': '2999-01-01T00:00:00Z'}) == set()
    assert ids(ip='10.0.0.1') == set()      # no network on this plane
    ordered = nova.servers.list(sort_keys=['display_name'],
                                sort_dirs=['asc'])
    assert [s.name for s in ordered] == ['small1', 'tiny1']


def test_novaclient_pages_with_limit_and_marker(url):
    """[api] max_limit is 3 here: novaclient follows the pages to the end
    and sees each server once."""
    nova = _user(url, '2.1')
    nova.servers.create('paged', IMAGE, 'tiny', min_count=5, max_count=5)
    assert len(nova.servers.list()) == 3           # one page
    listed = nova.servers.list(limit=-1)           # every page
    assert sorted(s.name for s in listed) == [
        'paged-%d' % i for i in range(1, 6)]
    first = nova.servers.list(limit=2)
    assert len(first) == 2
    rest = nova.servers.list(marker=first[-1].id, limit=-1)
    assert {s.id for s in first} | {s.id for s in rest} == {
        s.id for s in listed}


def test_min_and_max_count_and_reservation_id(url):
    nova = _user(url, '2.1')
    resp, body = nova.client.post('/servers', json={'server': {
        'name': 'many', 'imageRef': IMAGE, 'flavorRef': 'tiny',
        'min_count': 2, 'max_count': 3, 'return_reservation_id': True}})
    rid = body['reservation_id']
    found = nova.servers.list(search_opts={'reservation_id': rid})
    assert sorted(s.name for s in found) == ['many-1', 'many-2', 'many-3']
    with pytest.raises(nova_exc.BadRequest, match='min_count'):
        nova.client.post('/servers', json={'server': {
            'name': 'bad', 'imageRef': IMAGE, 'flavorRef': 'tiny',
            'min_count': 3, 'max_count': 2}})


def test_min_count_beyond_the_quota_makes_none(url):
    admin = client_support.nova(url, api_support.ADMIN_TOKEN, '2.1')
    token = api_support.new_project()
    project = token.split(':')[1]
    admin.quotas.update(project, instances=2)
    nova = client_support.nova(url, token, '2.1')
    with pytest.raises(nova_exc.Forbidden, match='instances'):
        nova.servers.create('q', IMAGE, 'tiny', min_count=3, max_count=4)
    assert nova.servers.list() == []
    nova.servers.create('q', IMAGE, 'tiny', min_count=1, max_count=4)
    assert sorted(s.name for s in nova.servers.list()) == ['q-1', 'q-2']


def test_user_metadata_through_novaclient(url):
    nova = _user(url, '2.1')
    server = _boot(nova, 'meta', meta={'color': 'red'})
    assert server.metadata == {'color': 'red'}
    nova.servers.set_meta(server, {'size': 'big', 'a.b:c d': 'x'})
    nova.servers.set_meta_item(server, 'color', 'blue')
    assert nova.servers.get(server.id).metadata == {
        'color': 'blue', 'size': 'big', 'a.b:c d': 'x'}
    nova.servers.delete_meta(server, ['size'])
    assert nova.servers.get(server.id).metadata == {
        'color': 'blue', 'a.b:c d': 'x'}
    with pytest.raises(nova_exc.NotFound):
        nova.servers.delete_meta(server, ['size'])
    with pytest.raises(nova_exc.BadRequest):
        nova.servers.set_meta(server, {'k' * 256: 'v'})


def test_metadata_quota_is_novas_403(url, shared_plane):
    nova = _user(url, '2.1')
    server = _boot(nova, 'meta-quota')
    limit = shared_plane.conf.quota.metadata_items
    with pytest.raises(nova_exc.Forbidden, match='metadata_items'):
        nova.servers.set_meta(server, {'k%d' % i: 'v'
                                       for i in range(limit + 1)})
    assert nova.servers.get(server.id).metadata == {}


def test_tags_through_novaclient(url):
    nova = _user(url, '2.26')
    server = _boot(nova, 'tagged')
    assert server.tags == []
    nova.servers.set_tags(server, ['red', 'big'])
    nova.servers.add_tag(server, 'new')
    assert sorted(nova.servers.tag_list(server)) == ['big', 'new', 'red']
    nova.servers.delete_tag(server, 'big')
    assert sorted(nova.servers.get(server.id).tags) == ['new', 'red']
    ids = {s.id for s in nova.servers.list(search_opts={'tags': 'red'})}
    assert ids == {server.id}
    with pytest.raises(nova_exc.BadRequest, match='tags'):
        nova.servers.set_tags(server, ['t%d' % i for i in range(51)])
    nova.servers.set_tags(server, ['t%d' % i for i in range(49)] + ['red'])
    with pytest.raises(nova_exc.BadRequest, match='per-server limit 50'):
        nova.servers.add_tag(server, 'one-too-many')
    with pytest.raises(nova_exc.BadRequest, match='tag'):
        nova.servers.add_tag(server, 'a,b')
    nova.servers.set_tags(server, ['red', 'new'])
    with pytest.raises(nova_exc.NotFound):
        nova.servers.delete_tag(server, 'nosuch')
    nova.servers.delete_all_tags(server)
    assert nova.servers.tag_list(server) == []


def test_lock_refuses_a_member_and_not_an_admin(url):
    token = api_support.new_project()
    nova = client_support.nova(url, token, '2.73')
    server = _boot(nova, 'locked')
    nova.servers.lock(server, reason='maintenance')
    shown = nova.servers.get(server.id)
    assert shown.locked is True and shown.locked_reason == 'maintenance'
    for refused in (lambda: nova.servers.stop(server),
                    lambda: nova.servers.delete(server),
                    lambda: nova.servers.set_meta(server, {'a': 'b'}),
                    lambda: nova.servers.rebuild(server, IMAGE)):
        with pytest.raises(nova_exc.Conflict, match='is locked'):
            refused()
    # a rename is not locked, as in Nova
    nova.servers.update(server, name='renamed')
    admin = client_support.nova(url, api_support.ADMIN_TOKEN, '2.73')
    admin.servers.lock(server)      # an admin locks it again: admin's lock
    with pytest.raises(nova_exc.Forbidden):
        nova.servers.unlock(server)
    admin.servers.stop(server)      # an admin is not held by the lock
    admin.servers.unlock(server)
    shown = nova.servers.get(server.id)
    assert shown.locked is False and shown.locked_reason is None
    wait_for(lambda: nova.servers.get(server.id).status == 'SHUTOFF',
             what='stopped by the admin')
    nova.servers.delete(server)


def test_locked_reason_needs_2_73(url):
    nova = _user(url, '2.72')
    server = _boot(nova, 'old-lock')
    with pytest.raises(nova_exc.BadRequest, match='locked_reason'):
        nova.client.post('/servers/%s/action' % server.id,
                         json={'lock': {'locked_reason': 'x'}})
    assert nova.servers.get(server.id).locked is False


def test_rebuild_takes_name_metadata_description(url):
    token = api_support.new_project()
    nova = client_support.nova(url, token, '2.19')
    server = _boot(nova, 'before', meta={'old': '1'}, description='d0')
    assert server.description == 'd0'
    after = nova.servers.rebuild(server, IMAGES['debian-12'], name='after',
                                 meta={'new': '2'}, description='d1',
                                 preserve_ephemeral=False)
    assert after.name == 'after'
    assert after.image['id'] == IMAGES['debian-12']
    assert after.metadata == {'new': '2'}
    assert after.description == 'd1'
    server = _active(nova, server)
    assert (server.name, server.metadata, server.description) == (
        'after', {'new': '2'}, 'd1')
    # a password given comes back, and the server keeps a config drive
    # for it (api/guest.py)
    assert nova.servers.rebuild(server, IMAGE,
                                password='secret').adminPass == 'secret'
    assert _active(nova, server).config_drive == 'True'
    old = client_support.nova(url, token, '2.18')
    with pytest.raises(nova_exc.BadRequest, match='description'):
        old.client.post('/servers/%s/action' % server.id, json={
            'rebuild': {'imageRef': IMAGE, 'description': 'x'}})


def test_update_sets_the_description_from_2_19(url):
    nova = _user(url, '2.19')
    server = _boot(nova, 'described')
    nova.servers.update(server, description='a web server')
    assert nova.servers.get(server.id).description == 'a web server'


def test_password_and_console_output(url):
    nova = _user(url, '2.1')
    server = _boot(nova, 'pw')
    resp, body = nova.client.get('/servers/%s/os-server-password' % server.id)
    assert body == {'password': ''}
    nova.servers.clear_password(server)
    # the fake guest's console log (issue 24): its last lines, the empty
    # piece after the final newline counted as Nova counts it
    output = nova.servers.get_console_output(server, length=2)
    assert output == 'BOOT-OK %s\n' % server.id
    with pytest.raises(nova_exc.BadRequest, match='length'):
        nova.client.post('/servers/%s/action' % server.id,
                         json={'os-getConsoleOutput': {'length': -2}})


def test_deleted_and_changes_since_through_openstacksdk(url):
    token = api_support.new_project()
    nova = client_support.nova(url, token, '2.1')
    kept, gone = _boot(nova, 'kept'), _boot(nova, 'gone')
    nova.servers.delete(gone)
    conn = client_support.sdk(url, api_support.ADMIN_TOKEN)
    project = token.split(':')[1]
    deleted = list(conn.compute.servers(deleted_only=True, all_projects=True,
                                        project_id=project))
    assert [(s.id, s.status) for s in deleted] == [(gone.id, 'DELETED')]
    since = (datetime.datetime.now(datetime.UTC)
             - datetime.timedelta(hours=1)).strftime('%Y-%m-%dT%H:%M:%SZ')
    mine = client_support.sdk(url, token)
    assert {s.id for s in mine.compute.servers(changes_since=since)} == {
        kept.id, gone.id}
    assert {s.id for s in mine.compute.servers()} == {kept.id}


# --- openstackclient (a subprocess per command: a few, the filters' flags) --

@pytest.fixture(scope='module')
def osc_home(tmp_path_factory, url):
    home = tmp_path_factory.mktemp('osc-servers')
    token = api_support.new_project()
    (home / 'clouds.yaml').write_text('clouds:\n' + ''.join(
        osc_support.CLOUD.format(name=name, url=url, token=tok)
        + '    identity_api_version: 3\n'
        '    identity_endpoint_override: %s/v2.1\n' % url
        for name, tok in (('tristate', token),
                          ('tristate-admin', api_support.ADMIN_TOKEN))))
    return home, token


def test_openstackclient_list_filters_lock_and_properties(url, osc_home):
    home, token = osc_home
    nova = client_support.nova(url, token, '2.1')
    tiny, small = _boot(nova, 'o-tiny'), _boot(nova, 'o-small', 'small')
    nova.servers.stop(tiny)
    wait_for(lambda: nova.servers.get(tiny.id).status == 'SHUTOFF',
             what='o-tiny stopped')

    def ids(*flags):
        return {s['ID'] for s in osc_support.osc(home, 'server', 'list',
                                                 *flags)}
    assert ids('--flavor', 'small') == {small.id}
    assert ids('--image', IMAGE) == {tiny.id, small.id}
    assert ids('--os-compute-api-version', '2.83', '--vm-state',
               'stopped') == {tiny.id}
    assert ids('--changes-since', '2999-01-01T00:00:00Z') == set()
    nova.servers.delete(small)
    # (--project needs Keystone to find the project: the cli helper's)
    deleted = {s['ID'] for s in osc_support.osc(
        home, 'server', 'list', '--deleted', '--all-projects',
        cloud='tristate-admin')}
    assert small.id in deleted and tiny.id not in deleted

    osc_support.osc(home, '--os-compute-api-version', '2.73', 'server',
                    'lock', '--reason', 'maintenance', tiny.id, parse=False)
    shown = osc_support.osc(home, '--os-compute-api-version', '2.73',
                            'server', 'show', tiny.id)
    assert shown['locked'] is True
    assert shown['locked_reason'] == 'maintenance'
    err = osc_support.fails(home, 'server', 'start', tiny.id)
    assert 'is locked' in err
    osc_support.osc(home, 'server', 'unlock', tiny.id, parse=False)
    osc_support.osc(home, 'server', 'set', '--property', 'color=red',
                    tiny.id, parse=False)
    osc_support.osc(home, '--os-compute-api-version', '2.26', 'server',
                    'set', '--tag', 'blue', tiny.id, parse=False)
    server = nova.servers.get(tiny.id)
    assert server.metadata == {'color': 'red'}
    assert client_support.nova(url, token, '2.26').servers.tag_list(
        server) == ['blue']
