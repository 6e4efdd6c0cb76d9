"""Snapshots and backups upload back (issue 21): ``createImage`` answers
with the id of a queued image at once; the agent uploads the disk with its
write grant and the image goes active, booting anywhere; a failed task
leaves its image ``killed``, never active; a backup's rotation deletes the
instance's older backups of its type once the new one is active.

Fake driver (its snapshot is a small qcow2), the API over real HTTP so that
agents reach ``/image`` with the grants the conductor issues.
"""

import pytest
import requests

from api import service as api_service
from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for


@pytest.fixture(scope='module')
def served(shared_plane):
    conf = api_support.configure(shared_plane.conf)
    client = api_service.make_client(conf, shared_plane.bus,
                                     shared_plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    set_opts(conf, 'image', service_url=server.url + '/image')
    yield server.url
    server.stop()


@pytest.fixture
def api(shared_plane, served):
    # 2.45+: createImage and createBackup answer {"image_id": ...}
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.new_project(), version='2.45')


def _image(served, api, image_id):
    resp = requests.get('%s/image/v2/images/%s' % (served, image_id),
                        headers={'X-Auth-Token': api.token}, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _wait_image(served, api, image_id, status):
    last = {}

    def reached():
        last['image'] = _image(served, api, image_id)
        return last['image']['status'] == status
    wait_for(reached, what='image %s to be %s' % (image_id, status),
             show=lambda: last.get('image', {}).get('status'))
    return last['image']


def _snapshot(api, server_id, body):
    resp = api.action(server_id, body, expect=(202,))
    return resp.get_json()['image_id']


def test_a_snapshot_is_queued_at_once_then_active_and_boots(api, served):
    server = api.active(name='snap-src')
    image_id = _snapshot(api, server['id'], {'createImage': {
        'name': 's1', 'metadata': {'purpose': 'golden'}}})
    image = _wait_image(served, api, image_id, 'active')
    assert image['purpose'] == 'golden'
    assert (image['name'], image['disk_format'], image['visibility']) == (
        's1', 'qcow2', 'private')
    assert image['image_type'] == 'snapshot'
    assert image['instance_uuid'] == server['id']
    assert image['size'] == len(fake.snapshot_content(server['id'], 's1'))
    assert len(image['os_hash_value']) == 128
    resp = api.post('/servers', {'server': {
        'name': 'from-snap', 'flavorRef': 'tiny', 'imageRef': image_id}})
    assert resp.status_code == 202, resp.get_json()
    booted = api.settled(resp.get_json()['server']['id'])
    assert (booted['status'], booted['image']['id']) == ('ACTIVE', image_id)


def test_a_failed_snapshot_leaves_its_image_killed(api, served,
                                                   shared_plane):
    server = api.active(name='snap-fails')
    store = fake.HostStore(shared_plane.conf.state_dir, api.host(server['id']))
    store.set_fault('snapshot', 'fail', count=1)
    image_id = _snapshot(api, server['id'], {'createImage': {'name': 'bad'}})
    after = api.settled(server['id'])
    assert after['status'] == 'ACTIVE'           # rolled back
    image = _image(served, api, image_id)
    assert image['status'] == 'killed'
    listed = requests.get('%s/image/v2/images' % served, timeout=10,
                          headers={'X-Auth-Token': api.token}).json()
    assert image_id not in [i['id'] for i in listed['images']]


def test_backup_rotation_keeps_the_newest(api, served):
    server = api.active(name='backed-up')
    made = []
    for n in range(3):
        made.append(_snapshot(api, server['id'], {'createBackup': {
            'name': 'b%d' % n, 'backup_type': 'daily', 'rotation': 2}}))
        _wait_image(served, api, made[-1], 'active')
        api.settled(server['id'])
    # a weekly backup is another rotation
    weekly = _snapshot(api, server['id'], {'createBackup': {
        'name': 'w', 'backup_type': 'weekly', 'rotation': 1}})
    _wait_image(served, api, weekly, 'active')
    resp = requests.get('%s/image/v2/images/%s' % (served, made[0]),
                        headers={'X-Auth-Token': api.token}, timeout=10)
    assert resp.status_code == 404
    for kept in made[1:] + [weekly]:
        assert _image(served, api, kept)['status'] == 'active'


@pytest.mark.parametrize('metadata, field', [
    ({'status': 'active'}, 'status'), ({'bad key!': 'x'}, 'metadata'),
    ({'k': 'v' * 256}, 'metadata')])
def test_snapshot_metadata_that_is_not_a_property_is_400(api, metadata,
                                                         field):
    server = api.active(name='snap-meta')
    resp = api.post('/servers/%s/action' % server['id'], {
        'createImage': {'name': 'm', 'metadata': metadata}})
    assert resp.status_code == 400, resp.get_json()
    assert field in api_support.message(resp)
