"""The queued image the API tier creates in an existing Glance for a
``createImage`` or ``createBackup`` (:mod:`api.snapshotimage`): Nova's
fields, its id passed on, and deleted again when the conductor refuses."""

import types

import pytest

from api import bootimage
from api import snapshotimage
from common import context
from common import exception

INST = {'uuid': 'inst-1', 'image_ref': 'base-1', 'flavor_name': 'small',
        'vcpus': 1, 'memory_mb': 2048, 'disk_gb': 20}


class Glance:
    def __init__(self):
        self.created, self.deleted = [], []

    def create(self, **fields):
        self.created.append(fields)
        return dict(fields, id='img-%d' % len(self.created),
                    status='queued')

    def delete(self, image_id):
        self.deleted.append(image_id)


@pytest.fixture
def glance(monkeypatch):
    glance = Glance()
    monkeypatch.setattr(bootimage, 'glance', lambda conf, ctx: glance)
    return glance


def _conf(endpoint='http://glance:9292'):
    return types.SimpleNamespace(image=types.SimpleNamespace(
        api_endpoint=endpoint))


CTX = context.RequestContext(user_id='alice', project_id='demo')


def test_a_backup_image_has_novas_fields_and_its_id_goes_on(glance):
    with snapshotimage.queued(_conf(), CTX, INST, 'backup', {
            'image_name': 'bk', 'rotation': 2,
            'backup_type': 'weekly'}) as params:
        assert params == {'image_name': 'bk', 'rotation': 2,
                          'backup_type': 'weekly', 'image_id': 'img-1'}
    assert glance.created == [{
        'name': 'bk', 'disk_format': 'qcow2', 'container_format': 'bare',
        'visibility': 'private', 'min_disk': 20, 'image_type': 'backup',
        'instance_uuid': 'inst-1', 'base_image_ref': 'base-1',
        'user_id': 'alice', 'backup_type': 'weekly'}]
    assert glance.deleted == []


def test_a_refused_action_deletes_the_image(glance):
    with pytest.raises(exception.Conflict):
        with snapshotimage.queued(_conf(), CTX, INST, 'snapshot',
                                  {'image_name': 's'}) as params:
            assert 'backup_type' not in glance.created[0]
            raise exception.Conflict('task running')
    assert glance.deleted == [params['image_id']]


def test_an_unanswered_call_keeps_the_image(glance):
    """A timeout is no refusal: the task may run and upload to it."""
    with pytest.raises(TimeoutError):
        with snapshotimage.queued(_conf(), CTX, INST, 'snapshot',
                                  {'image_name': 's'}):
            raise TimeoutError()
    assert glance.deleted == []


@pytest.mark.parametrize('conf, action, params', [
    (_conf(None), 'snapshot', {'image_name': 's'}),   # Tristate's own
    (_conf(), 'stop', {}),
    (_conf(), 'snapshot', {'image_name': 's', 'image_id': 'given'}),
])
def test_nothing_is_created_otherwise(glance, conf, action, params):
    with snapshotimage.queued(conf, CTX, INST, action, params) as passed:
        assert passed == params
    assert glance.created == []
