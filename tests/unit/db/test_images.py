"""The image catalogue (common/db/images.py) on SQLite and PostgreSQL: who
sees which image, Glance's list filters and pages, the upload's status
moves and their recovery after a crash, members, soft delete, and the
service key made once however many callers race for it."""

import threading

import pytest

from common import context
from common import exception
from common.db import images


def _ctx(project, admin=False):
    return context.RequestContext(user_id='u-' + project, project_id=project,
                                  is_admin=admin,
                                  roles=['admin'] if admin else ['member'])


ALICE, BOB, CAROL = _ctx('alice'), _ctx('bob'), _ctx('carol')
ADMIN = _ctx('admin', admin=True)


def _make(statedb, ctx=ALICE, **values):
    values.setdefault('disk_format', 'raw')
    values.setdefault('container_format', 'bare')
    return images.create(statedb, ctx, values)


def _ids(rows):
    return [r['id'] for r in rows]


def test_create_is_queued_shared_and_owned(statedb):
    image = _make(statedb, name='cirros', properties={'os_distro': 'x'},
                  tags=['a', 'a', 'b'], min_disk=1)
    assert image['status'] == 'queued'
    assert image['visibility'] == 'shared'          # Glance's default
    assert image['owner'] == 'alice'
    assert image['tags'] == ['a', 'b']
    assert image['properties'] == {'os_distro': 'x'}
    assert (image['min_disk'], image['min_ram']) == (1, 0)
    with pytest.raises(exception.Conflict):
        _make(statedb, id=image['id'])
    with pytest.raises(exception.Forbidden):
        _make(statedb, owner='bob')


def test_who_sees_what(statedb):
    private = _make(statedb, visibility='private')['id']
    public = _make(statedb, visibility='public')['id']
    community = _make(statedb, visibility='community')['id']
    shared = _make(statedb, visibility='shared')['id']
    for image_id in (private, shared):
        with pytest.raises(exception.ImageNotFound):
            images.get(statedb, BOB, image_id)
    assert images.get(statedb, BOB, public)['id'] == public
    assert images.get(statedb, BOB, community)['id'] == community
    assert images.get(statedb, ADMIN, private)['id'] == private
    # bob lists the public one; community images only when asked for
    assert _ids(images.list_images(statedb, BOB)) == [public]
    assert _ids(images.list_images(statedb, BOB, visibility='community')) \
        == [community]
    assert set(_ids(images.list_images(statedb, ALICE))) == {
        private, public, community, shared}
    # sharing: pending is seen by show, listed only once accepted
    images.add_member(statedb, ALICE, shared, 'bob')
    assert images.get(statedb, BOB, shared)['id'] == shared
    assert shared not in _ids(images.list_images(statedb, BOB))
    assert shared in _ids(images.list_images(statedb, BOB,
                                             member_status='pending'))
    images.update_member(statedb, BOB, shared, 'bob', 'accepted')
    assert shared in _ids(images.list_images(statedb, BOB))
    with pytest.raises(exception.ImageNotFound):
        images.get(statedb, CAROL, shared)


def test_only_the_owner_changes_an_image(statedb):
    public = _make(statedb, visibility='public')['id']
    with pytest.raises(exception.Forbidden):
        images.update(statedb, BOB, public, values={'name': 'mine'})
    with pytest.raises(exception.Forbidden):
        images.delete(statedb, BOB, public)
    changed = images.update(statedb, ALICE, public, values={'name': 'n'},
                            properties={'k': 'v'}, add_tags=['t'])
    assert (changed['name'], changed['properties'], changed['tags']) == (
        'n', {'k': 'v'}, ['t'])
    changed = images.update(statedb, ALICE, public, remove=['k'],
                            remove_tags=['t'])
    assert (changed['properties'], changed['tags']) == ({}, [])
    with pytest.raises(exception.Conflict):
        images.update(statedb, ALICE, public, remove=['k'])


def test_protected_refuses_delete_and_deleted_is_not_found(statedb):
    image = _make(statedb, protected=True)['id']
    with pytest.raises(exception.Forbidden):
        images.delete(statedb, ALICE, image)
    images.update(statedb, ALICE, image, values={'protected': False})
    images.delete(statedb, ALICE, image)
    for ctx in (ALICE, ADMIN, None):
        with pytest.raises(exception.ImageNotFound):
            images.get(statedb, ctx, image)
    assert image not in _ids(images.list_images(statedb, ADMIN))


def _upload(statedb, image_id, **kwargs):
    token = images.begin_upload(statedb, image_id, **kwargs)['location']
    assert token.startswith(images.UPLOAD_TOKEN_PREFIX)
    return token


def test_upload_moves_queued_saving_active(statedb):
    image_id = _make(statedb)['id']
    token = _upload(statedb, image_id)
    assert images.get(statedb, ALICE, image_id)['status'] == 'saving'
    with pytest.raises(exception.Conflict):
        images.begin_upload(statedb, image_id)      # one upload at a time
    done = images.finish_upload(statedb, image_id, token,
                                location='file:///x', size=3,
                                checksum='c' * 32, os_hash_value='h' * 128,
                                virtual_size=3)
    assert done['status'] == 'active'
    assert (done['size'], done['os_hash_algo']) == (3, 'sha512')
    with pytest.raises(exception.Conflict) as err:
        images.begin_upload(statedb, image_id)
    assert 'active' in err.value.message


def test_failed_upload_goes_back_to_queued_or_killed(statedb):
    image_id = _make(statedb)['id']
    token = _upload(statedb, image_id)
    assert images.abort_upload(statedb, image_id, token)
    image = images.get(statedb, None, image_id)
    assert (image['status'], image['location']) == ('queued', None)
    token = _upload(statedb, image_id)
    assert images.abort_upload(statedb, image_id, token, status='killed')
    assert images.get(statedb, None, image_id)['status'] == 'killed'


def test_a_dead_upload_is_taken_over_and_cannot_finish(statedb, clock):
    image_id = _make(statedb)['id']
    dead = _upload(statedb, image_id)
    clock.advance(30)
    assert images.touch_upload(statedb, image_id, dead)
    clock.advance(59)
    with pytest.raises(exception.Conflict):         # still fresh
        images.begin_upload(statedb, image_id, stale_after=60)
    clock.advance(1)
    alive = _upload(statedb, image_id, stale_after=60)
    assert not images.touch_upload(statedb, image_id, dead)
    assert images.finish_upload(statedb, image_id, dead, location='f:///d',
                                size=1, checksum='c', os_hash_value='h') \
        is None
    assert images.finish_upload(statedb, image_id, alive, location='f:///a',
                                size=1, checksum='c', os_hash_value='h')[
        'location'] == 'f:///a'


def test_recover_stale_uploads(statedb, clock):
    stale = _make(statedb)['id']
    fresh = _make(statedb)['id']
    _upload(statedb, stale)
    clock.advance(100)
    _upload(statedb, fresh)
    assert images.recover_stale_uploads(statedb, stale_after=60) == [stale]
    assert images.get(statedb, None, stale)['status'] == 'queued'
    assert images.get(statedb, None, fresh)['status'] == 'saving'


def test_deleted_while_saving_cannot_finish(statedb):
    image_id = _make(statedb)['id']
    token = _upload(statedb, image_id)
    before = images.delete(statedb, ALICE, image_id)
    assert images.stored_location(before) is None
    assert images.finish_upload(statedb, image_id, token, location='f:///x',
                                size=1, checksum='c', os_hash_value='h') \
        is None


def test_list_filters(statedb, clock):
    a = _make(statedb, name='a', properties={'os_distro': 'debian',
                                             'x.y': '1'}, tags=['t1', 't2'])
    clock.advance(1)
    b = _make(statedb, name='b', disk_format='qcow2', tags=['t2'],
              protected=True)
    clock.advance(1)
    hidden = _make(statedb, name='h', os_hidden=True)

    def ids(**kwargs):
        return _ids(images.list_images(statedb, ALICE, **kwargs))
    assert ids() == [b['id'], a['id']]              # created_at desc
    assert ids(filters={'name': 'a'}) == [a['id']]
    assert ids(filters={'name': 'in:a,b'}) == [b['id'], a['id']]
    assert ids(filters={'disk_format': 'qcow2'}) == [b['id']]
    assert ids(filters={'protected': True}) == [b['id']]
    assert ids(filters={'properties': {'os_distro': 'debian'}}) == [a['id']]
    assert ids(filters={'properties': {'x.y': '1'}}) == [a['id']]
    assert ids(filters={'properties': {'os_distro': 'debia'}}) == []
    assert ids(tags=['t2']) == [b['id'], a['id']]
    assert ids(tags=['t1', 't2']) == [a['id']]
    assert ids(filters={'os_hidden': True}) == [hidden['id']]
    assert ids(filters={'owner': 'bob'}) == []
    assert ids(sort=[('name', 'asc')]) == [a['id'], b['id']]


@pytest.mark.parametrize('key', ['a"b', 'a\\b', "a'b", '$', 'a[0]', 'ü',
                                 'x' * 255])
def test_any_property_name_filters(statedb, key):
    wanted = _make(statedb, properties={key: 'v', 'other': 'w'})['id']
    _make(statedb, properties={key: 'w'})
    assert _ids(images.list_images(statedb, ALICE, filters={
        'properties': {key: 'v'}})) == [wanted]


def test_pages_cover_everything_once(statedb, clock):
    made = []
    for i in range(7):
        made.append(_make(statedb, name='n%d' % (i % 3))['id'])
        if i % 2:
            clock.advance(1)        # some share a created_at
    for sort in ([], [('name', 'asc')], [('name', 'desc'), ('id', 'asc')]):
        seen, marker = [], None
        while True:
            page = _ids(images.list_images(statedb, ALICE, sort=sort,
                                           limit=3, marker=marker))
            seen += page
            if len(page) < 3:
                break
            marker = page[-1]
        assert sorted(seen) == sorted(made), sort
        assert len(seen) == len(made)
    with pytest.raises(exception.Invalid):
        images.list_images(statedb, BOB, marker=made[0])


def test_members(statedb):
    image = _make(statedb)['id']
    private = _make(statedb, visibility='private')['id']
    with pytest.raises(exception.Forbidden):
        images.add_member(statedb, ALICE, private, 'bob')
    images.add_member(statedb, ALICE, image, 'bob')
    images.add_member(statedb, ALICE, image, 'carol')
    with pytest.raises(exception.Conflict):
        images.add_member(statedb, ALICE, image, 'bob')
    assert [m['member'] for m in images.list_members(statedb, ALICE,
                                                     image)] == ['bob',
                                                                 'carol']
    assert [m['member'] for m in images.list_members(statedb, BOB,
                                                     image)] == ['bob']
    with pytest.raises(exception.Forbidden):        # the owner cannot accept
        images.update_member(statedb, ALICE, image, 'bob', 'accepted')
    with pytest.raises(exception.ImageMemberNotFound):
        images.update_member(statedb, BOB, image, 'carol', 'accepted')
    with pytest.raises(exception.InvalidState):
        images.update_member(statedb, BOB, image, 'bob', 'maybe')
    assert images.update_member(statedb, BOB, image, 'bob',
                                'rejected')['status'] == 'rejected'
    with pytest.raises(exception.Forbidden):
        images.delete_member(statedb, BOB, image, 'bob')
    images.delete_member(statedb, ALICE, image, 'bob')
    with pytest.raises(exception.ImageNotFound):
        images.get(statedb, BOB, image)


def test_service_key_is_made_once_under_a_race(statedb):
    keys, errors = [], []
    barrier = threading.Barrier(8)

    def take():
        try:
            barrier.wait()
            keys.append(images.service_key(statedb, 'image-grants'))
        except Exception as err:            # noqa: BLE001 - reported below
            errors.append(err)
    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(keys)) == 1 and len(keys[0]) == 32
    assert images.service_key(statedb, 'other') != keys[0]


def test_a_boot_sees_what_a_show_sees(statedb):
    """get_for_boot (the create path's prepared read) follows get's rule."""
    made = {v: _make(statedb, visibility=v)['id']
            for v in ('private', 'public', 'community', 'shared')}
    gone = _make(statedb, visibility='public')['id']
    images.delete(statedb, ALICE, gone)
    images.add_member(statedb, ALICE, made['shared'], 'carol')
    for ctx in (ALICE, BOB, CAROL, ADMIN):
        for image_id in list(made.values()) + [gone]:
            try:
                expected = images.get(statedb, ctx, image_id)['id']
            except exception.ImageNotFound:
                expected = None
            try:
                got = images.get_for_boot(statedb, ctx, image_id)['id']
            except exception.ImageNotFound:
                got = None
            assert got == expected, (ctx.project_id, image_id)
    assert images.get_for_boot(statedb, CAROL, made['shared'])['owner'] == (
        'alice')
