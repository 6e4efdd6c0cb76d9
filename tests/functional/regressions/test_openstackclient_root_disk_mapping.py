"""``openstack server create --image NAME`` was refused with a 400.

openstackclient sends the image twice: as ``imageRef`` and as the root
disk's block device mapping (``block_device_mapping_v2``: the image, to
the host's local disk, boot index 0, deleted with the server: Nova's
default root disk). The create schema knew no ``block_device_mapping_v2``
and refused the body ("Additional properties are not allowed"), so no
server could be created with openstackclient. Found by issue 21's
openstackclient test (tests/functional/test_openstackclient.py).

Fixed: the schema accepts that one mapping (``api.schemas.IMAGE_ROOT_DISK``)
and the route checks that its uuid is the imageRef; any other mapping (a
volume, a blank, swap or ephemeral disk, a second disk, another image) is
a 400 naming the field, and nothing is created.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.images_support import IMAGE
from tests.images_support import IMAGES

ROOT = {'uuid': IMAGE, 'boot_index': 0, 'source_type': 'image',
        'destination_type': 'local', 'delete_on_termination': True}


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


def _create(api, mappings):
    return api.post('/servers', {'server': {
        'name': 'bdm', 'flavorRef': 'tiny', 'imageRef': IMAGE,
        'block_device_mapping_v2': mappings}})


def test_the_image_root_disk_openstackclient_sends_is_accepted(api):
    resp = _create(api, [ROOT])
    assert resp.status_code == 202, resp.get_json()
    server = api.settled(resp.get_json()['server']['id'])
    assert server['status'] == 'ACTIVE'
    assert server['image']['id'] == IMAGE


@pytest.mark.parametrize('mappings, field', [
    ([dict(ROOT, destination_type='volume')],
     'block_device_mapping_v2.0.destination_type'),
    ([dict(ROOT, source_type='blank')],
     'block_device_mapping_v2.0.source_type'),
    ([dict(ROOT, boot_index=1)], 'block_device_mapping_v2.0.boot_index'),
    ([ROOT, dict(ROOT, source_type='blank', boot_index=-1)],
     'block_device_mapping_v2'),
    ([dict(ROOT, uuid=IMAGES['debian-12'])],
     'block_device_mapping_v2.0.uuid'),
], ids=['volume', 'blank', 'not-boot', 'two-disks', 'another-image'])
def test_other_mappings_are_refused_naming_the_field(api, mappings, field):
    resp = _create(api, mappings)
    assert resp.status_code == 400, resp.get_json()
    assert 'server.%s' % field in message(resp)
    assert api.ids() == []
