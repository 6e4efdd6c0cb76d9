"""Nova's ``hostname`` (2.90, an FQDN from 2.94) and ``OS-DCF:diskConfig``
(AUTO, MANUAL) on create, update, rebuild and resize (issue 22,
api/diskhost.py): validated as Nova validates them, stored, shown, and
the hostname delivered in the config drive's ``meta_data.json``. Found by
Tempest: ``ServersTestJSON``'s set-up creates with AUTO,
``ServersV294TestFqdnHostnames``'s with an FQDN hostname, and both were
refused as not supported."""

import json

import pytest

from tests import images_support
from tests.functional import api_support
from tests.functional.api_support import IMAGE
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import domain
from tests.unit.compute_agent.test_configdrive import read

FQDN = 'x' * 52 + '-guest-test.domaintest.com'      # Tempest's, 78 chars


@pytest.fixture(scope='module')
def user(shared_plane):
    return Api(api_support.make_app(shared_plane),
               token=api_support.new_project())


def _create(api, version='2.90', **fields):
    body = dict({'name': 'named', 'flavorRef': 'tiny', 'imageRef': IMAGE},
                **fields)
    return api.post('/servers', {'server': body}, version=version)


def _meta_hostname(plane, uuid):
    host = plane.statedb.get_instance(uuid)['host']
    files, _ = read(domain(plane, host, uuid)['config_drive'])
    return json.loads(files['openstack/latest/meta_data.json'])['hostname']


def _hostname(api, uuid):
    return api.server(uuid, version='2.90')['OS-EXT-SRV-ATTR:hostname']


def test_a_hostname_is_kept_shown_and_given_to_the_guest(shared_plane,
                                                         user):
    resp = _create(user, hostname='web-01', config_drive=True)
    assert resp.status_code == 202, resp.get_json()
    uuid = resp.get_json()['server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    assert _hostname(user, uuid) == 'web-01'
    assert _meta_hostname(shared_plane, uuid) == 'web-01'
    # a rename keeps it; PUT changes it, as Nova
    resp = user.put('/servers/%s' % uuid, {'server': {
        'name': 'renamed', 'hostname': 'web-02'}}, version='2.90')
    assert resp.status_code == 200, resp.get_json()
    assert resp.get_json()['server']['OS-EXT-SRV-ATTR:hostname'] == 'web-02'
    # a rebuild's new hostname is in the drive the rebuild writes
    resp = user.post('/servers/%s/action' % uuid, {'rebuild': {
        'imageRef': IMAGE, 'hostname': 'web-03'}}, version='2.90')
    assert resp.status_code == 202, resp.get_json()
    assert resp.get_json()['server']['OS-EXT-SRV-ATTR:hostname'] == 'web-03'
    assert user.settled(uuid)['status'] == 'ACTIVE'
    assert _meta_hostname(shared_plane, uuid) == 'web-03'
    # from 2.94 an FQDN
    resp = user.put('/servers/%s' % uuid, {'server': {'hostname': FQDN}},
                    version='2.94')
    assert resp.status_code == 200, resp.get_json()
    assert _hostname(user, uuid) == FQDN


@pytest.mark.parametrize('version, fields, field', [
    ('2.89', {'hostname': 'web'}, 'hostname'),
    ('2.90', {'hostname': 'web.example.com'}, 'server.hostname'),
    ('2.90', {'hostname': 'x' * 64}, 'server.hostname'),
    ('2.94', {'hostname': 'has space'}, 'server.hostname'),
    ('2.94', {'hostname': 'x' * 256}, 'server.hostname'),
    ('2.94', {'hostname': 'one', 'max_count': 2}, 'hostname'),
    ('2.1', {'OS-DCF:diskConfig': 'auto'}, 'server.OS-DCF:diskConfig'),
])
def test_a_bad_hostname_or_disk_config_is_a_400(user, version, fields,
                                                field):
    before = len(user.get('/servers').get_json()['servers'])
    resp = _create(user, version=version, **fields)
    assert resp.status_code == 400, resp.get_json()
    assert field in message(resp)
    assert len(user.get('/servers').get_json()['servers']) == before


def test_the_disk_config_is_kept_and_shown(user):
    resp = _create(user, version='2.1', **{'OS-DCF:diskConfig': 'AUTO'})
    assert resp.status_code == 202, resp.get_json()
    created = resp.get_json()['server']
    assert created['OS-DCF:diskConfig'] == 'AUTO'
    uuid = created['id']
    assert user.settled(uuid)['OS-DCF:diskConfig'] == 'AUTO'
    resp = user.put('/servers/%s' % uuid, {'server': {
        'OS-DCF:diskConfig': 'MANUAL'}})
    assert resp.get_json()['server']['OS-DCF:diskConfig'] == 'MANUAL'
    resp = user.post('/servers/%s/action' % uuid, {'rebuild': {
        'imageRef': IMAGE, 'OS-DCF:diskConfig': 'AUTO'}})
    assert resp.status_code == 202, resp.get_json()
    assert resp.get_json()['server']['OS-DCF:diskConfig'] == 'AUTO'
    assert user.settled(uuid)['OS-DCF:diskConfig'] == 'AUTO'
    # no disk config given: MANUAL, what Nova makes of an image without
    # the property
    plain = _create(user, version='2.1').get_json()['server']
    assert plain['OS-DCF:diskConfig'] == 'MANUAL'


def test_the_image_s_property_refuses_auto_or_makes_it_the_default(
        shared_plane, user):
    def image(value):
        return images_support.register_image(
            shared_plane.conf, shared_plane.statedb,
            image_id='d15c0000-0000-4000-8000-00000000000%d' % len(value),
            name='disk-' + value, properties={'auto_disk_config': value})
    disabled, auto = image('disabled')['id'], image('True')['id']
    resp = _create(user, version='2.1', imageRef=disabled,
                   **{'OS-DCF:diskConfig': 'AUTO'})
    assert resp.status_code == 400
    assert 'automatic disk resize disabled' in message(resp)
    made = _create(user, version='2.1', imageRef=auto).get_json()['server']
    assert made['OS-DCF:diskConfig'] == 'AUTO'
    made = _create(user, version='2.1', imageRef=disabled).get_json()[
        'server']
    assert made['OS-DCF:diskConfig'] == 'MANUAL'
