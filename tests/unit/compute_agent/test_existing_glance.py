"""Backup rotation done by the agent in an existing Glance
(:mod:`compute_agent.existing_glance`), over an in-memory stand-in of
:class:`common.images.client.GlanceClient`: what is listed, what is
deleted and in which order, and that a failing Glance never fails the
backup that was made."""

import pytest

from common.images import client as image_client
from compute_agent import existing_glance

INSTANCE = 'inst-1'


class Glance:
    """The client calls rotation makes; ``listed`` keeps the filters."""

    def __init__(self):
        self.images = {}
        self.deleted = []
        self.listed = []
        self.fail_delete = set()
        self.fail_list = False

    def add(self, image_id, created, **props):
        self.images[image_id] = dict(
            {'id': image_id, 'status': 'active', 'protected': False,
             'image_type': 'backup', 'instance_uuid': INSTANCE,
             'backup_type': 'daily', 'created_at': created}, **props)

    def show(self, image_id):
        return self.images[image_id]

    def list(self, **filters):
        self.listed.append(filters)
        if self.fail_list:
            raise image_client.ImageServiceError(status=500, what='GET',
                                                 reason='down')
        sort = filters.pop('sort')
        assert sort == 'created_at:desc'
        found = [i for i in self.images.values()
                 if all(i.get(k) == v for k, v in filters.items())]
        return sorted(found, key=lambda i: i['created_at'], reverse=True)

    def delete(self, image_id):
        if image_id in self.fail_delete:
            raise image_client.ImageForbidden(image=image_id, reason='no')
        del self.images[image_id]
        self.deleted.append(image_id)


@pytest.fixture
def glance():
    glance = Glance()
    for n in range(1, 5):
        glance.add('b%d' % n, n)
    glance.add('weekly', 0, backup_type='weekly')
    glance.add('other-instance', 0, instance_uuid='inst-2')
    glance.add('snapshot', 0, image_type='snapshot')
    glance.add('queued', 0, status='queued')
    return glance


def test_older_backups_of_the_type_go_oldest_first(glance):
    assert existing_glance.rotate(glance, 'b4', 2) == ['b1', 'b2']
    assert sorted(glance.images) == ['b3', 'b4', 'other-instance', 'queued',
                                     'snapshot', 'weekly']
    assert glance.listed == [{'image_type': 'backup', 'status': 'active',
                              'instance_uuid': INSTANCE,
                              'backup_type': 'daily'}]


def test_the_new_backup_is_kept_even_if_listed_out_of_order(glance):
    glance.images['b4']['created_at'] = 0     # clocks: still the newest
    assert existing_glance.rotate(glance, 'b4', 1) == ['b1', 'b2', 'b3']
    assert 'b4' in glance.images


def test_rotation_zero_keeps_none_as_nova(glance):
    assert existing_glance.rotate(glance, 'b4', 0) == ['b1', 'b2', 'b3',
                                                       'b4']


def test_protected_backups_are_kept_and_not_counted(glance):
    glance.images['b1']['protected'] = True
    assert existing_glance.rotate(glance, 'b4', 2) == ['b2']
    assert 'b1' in glance.images


def test_no_rotation_or_not_a_backup_deletes_nothing(glance):
    assert existing_glance.rotate(glance, 'b4', None) == []
    assert existing_glance.rotate(glance, 'snapshot', 0) == []
    assert glance.deleted == [] and glance.listed == []


def test_a_failing_glance_is_logged_not_raised(glance, caplog):
    glance.fail_delete = {'b1'}
    assert existing_glance.rotate(glance, 'b4', 1) == ['b2', 'b3']
    assert 'image b1 not deleted' in caplog.text
    glance.fail_list = True
    assert existing_glance.rotate(glance, 'b4', 1) == []
    assert 'Backup rotation after image b4 not done' in caplog.text


@pytest.mark.parametrize('spec, existing', [
    ({'url': 'http://glance:9292', 'grant': None}, True),
    ({'url': 'http://api/image', 'grant': 'g1.x.y'}, False),
    (None, False),
])
def test_an_existing_glance_is_a_url_without_a_grant(spec, existing):
    assert existing_glance.existing({'image': spec}) is existing
