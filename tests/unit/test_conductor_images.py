"""What the conductor gives a task to reach its image
(:class:`conductor.images.ImageAccess`): the image service's URL and a
grant for that host, that image and that operation only; nothing without
an image service; no grant for an existing Glance."""

import time

import pytest
from oslo_config import cfg

from common import conf as tconf
from common.db import images as images_db
from common.images import grants
from conductor import images

URL = 'http://controller:8774/image'
IMAGE = '1b3e3a52-70d0-4a4e-8d55-6b1b2b0f9c11'
PAYLOAD = {'uuid': 'i-1', 'image_ref': IMAGE}


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([])
    return conf


@pytest.fixture
def access(conf, statedb):
    conf.set_override('service_url', URL, group='image')
    return images.ImageAccess(conf, statedb)


def _claims(statedb, params, image_id, op):
    key = images_db.service_key(statedb, images.GRANT_KEY)
    return grants.verify(key, params['image']['grant'], image_id=image_id,
                         op=op, now=time.time())


@pytest.mark.parametrize('action, params', [
    ('build', {}), ('rebuild', {'image_ref': IMAGE}),
    ('rescue', {'image_ref': IMAGE})])
def test_reads_get_a_read_grant_for_their_host(access, statedb, action,
                                                params):
    out = access.task_params('host1', PAYLOAD, action, params)
    assert out['image']['url'] == URL
    claims = _claims(statedb, out, IMAGE, 'read')
    assert (claims.host, claims.rotation) == ('host1', None)
    with pytest.raises(grants.Refused):
        _claims(statedb, out, IMAGE, 'write')


def test_a_backup_gets_a_write_grant_with_its_rotation(access, statedb):
    out = access.task_params('host2', PAYLOAD, 'backup', {
        'image_id': 'img-b', 'image_name': 'b', 'rotation': 3})
    claims = _claims(statedb, out, 'img-b', 'write')
    assert (claims.host, claims.rotation) == ('host2', 3)


@pytest.mark.parametrize('action', ['stop', 'resize', 'live_migrate'])
def test_other_tasks_get_nothing(access, action):
    assert access.task_params('h', PAYLOAD, action, {}) == {}


def test_without_an_image_service_nothing_is_added(conf, statedb):
    access = images.ImageAccess(conf, statedb)
    assert access.task_params('h', PAYLOAD, 'build', {}) == {}


def test_an_existing_glance_gets_its_url_and_no_grant(access, conf):
    conf.set_override('api_endpoint', 'http://glance:9292', group='image')
    out = access.task_params('h', PAYLOAD, 'build', {})
    assert out['image'] == {'url': 'http://glance:9292', 'grant': None}
