"""``openstack server rebuild --image NAME`` printed the old image.

Nova answers an accepted rebuild with ``202`` and the server (status
``REBUILD``, the new image); openstackclient prints that answer, after
waiting with ``--wait``. Tristate answered ``202`` with an empty body, so
the client printed the server as it was before the rebuild: its old image,
as if the rebuild had not taken. Found by issue 21's openstackclient test
(tests/functional/test_openstackclient.py).

Fixed: the rebuild's answer is ``{"server": ...}`` as the claimed rebuild
has it, with the image it is rebuilt from (the record's ``image_ref``
itself changes when the rebuild succeeds), in the body of the request's
microversion.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import NO_HEADER
from tests.functional.api_support import Api
from tests.images_support import IMAGE
from tests.images_support import IMAGES


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.mark.parametrize('version', [NO_HEADER, '2.47', '2.100'])
def test_the_rebuild_answers_the_server_with_its_new_image(app, version):
    api = Api(app, token=api_support.new_project(), version=version)
    server = api.active()
    assert server['image']['id'] == IMAGE
    resp = api.action(server['id'], {'rebuild': {
        'imageRef': IMAGES['debian-12']}}, expect=(202,))
    answer = resp.get_json()['server']
    assert answer['id'] == server['id']
    assert answer['image']['id'] == IMAGES['debian-12']
    assert answer['status'] == 'REBUILD'
    # the body of this microversion: Nova's basic view before 2.75 (no
    # OS-EXT-STS keys), 2.47 embeds the flavor
    assert answer.get('OS-EXT-STS:task_state') == (
        'rebuilding' if version == '2.100' else None)
    assert len(answer['adminPass']) == 12     # generated, as Nova's
    assert ('original_name' in answer['flavor']) == (version != NO_HEADER)
    after = api.settled(server['id'])
    assert (after['status'], after['image']['id']) == (
        'ACTIVE', IMAGES['debian-12'])
