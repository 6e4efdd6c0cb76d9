"""The image a create, rebuild or rescue names is checked before anything
is claimed, as Nova checks it: it must exist in the catalogue, be visible
to the caller's project and active, and fit the flavor. Each refusal is a
400 naming the image and what was expected, and leaves nothing behind (no
server, no task, no quota used)."""

import uuid as uuidlib

import pytest

from common import context
from common.db import images as images_db
from tests import images_support
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def plane(shared_plane):
    return shared_plane


@pytest.fixture(scope='module')
def app(plane):
    return api_support.make_app(plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


def _image(plane, **values):
    image_id = str(uuidlib.uuid4())
    return images_support.register_image(plane.conf, plane.statedb,
                                         image_id=image_id, name='img',
                                         **values)


def _create(api, image_ref, flavor='tiny'):
    return api.post('/servers', {'server': {
        'name': 'x', 'flavorRef': flavor, 'imageRef': image_ref}})


def _refused(api, resp, *words):
    assert resp.status_code == 400, resp.get_json()
    text = message(resp)
    for word in words:
        assert word in text, text
    assert api.ids() == []


def test_an_image_not_in_the_catalogue(api):
    missing = str(uuidlib.uuid4())
    _refused(api, _create(api, missing), missing, 'could not be found')


def test_another_projects_private_image_is_not_found(api, plane):
    theirs = _image(plane, visibility='private', owner='someone-else')
    _refused(api, _create(api, theirs['id']), theirs['id'],
             'could not be found')


def test_a_public_image_of_another_project_boots(api, plane):
    theirs = _image(plane, visibility='public', owner='someone-else')
    assert _create(api, theirs['id']).status_code == 202


def test_an_image_not_active(api, plane):
    queued = images_db.create(plane.statedb, context.get_admin_context(), {
        'name': 'empty', 'visibility': 'public', 'disk_format': 'raw',
        'container_format': 'bare'})
    _refused(api, _create(api, queued['id']), queued['id'], 'not active',
             'queued')


def test_a_deleted_image(api, plane):
    gone = _image(plane, visibility='public')
    images_db.delete(plane.statedb, context.get_admin_context(), gone['id'])
    _refused(api, _create(api, gone['id']), gone['id'], 'could not be found')


def test_min_ram_above_the_flavor(api, plane):
    big = _image(plane, visibility='public', min_ram=1 << 20)
    _refused(api, _create(api, big['id']), big['id'], 'memory is too small',
             'min_ram')


def test_min_disk_above_the_flavor(api, plane):
    big = _image(plane, visibility='public', min_disk=100000)
    _refused(api, _create(api, big['id']), big['id'], 'disk is too small',
             'min_disk')


def test_rebuild_and_rescue_check_their_image_too(api, plane):
    server = api.active()
    theirs = _image(plane, visibility='private', owner='someone-else')
    for body in ({'rebuild': {'imageRef': theirs['id']}},
                 {'rescue': {'rescue_image_ref': theirs['id']}}):
        resp = api.post('/servers/%s/action' % server['id'], body)
        assert resp.status_code == 400, (body, resp.get_json())
        assert theirs['id'] in message(resp)
    after = api.server(server['id'])
    assert (after['status'], after['image']['id']) == (
        'ACTIVE', images_support.IMAGE)
