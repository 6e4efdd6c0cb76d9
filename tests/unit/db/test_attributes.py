"""A server's attributes (common/db/attributes.py): one transaction on the
row read for update; what a change cannot do changes nothing."""

import pytest

from common import exception
from common.db import attributes
from common.db import usage


def test_a_new_instance_has_none(statedb, instances):
    uuid = instances.active()
    inst = statedb.get_instance(uuid)
    assert (inst['metadata'], inst['tags'], inst['locked'],
            inst['description']) == ({}, [], False, None)


def test_metadata_merge_replace_delete(statedb, instances):
    uuid = instances.active()
    _, after = statedb.update_attributes(
        uuid, {'metadata': {'set': {'a': '1', 'b': '2'}}})
    assert after['metadata'] == {'a': '1', 'b': '2'}
    statedb.update_attributes(uuid, {'metadata': {'set': {'b': '3'},
                                                  'delete': ['a']}})
    assert statedb.get_instance(uuid)['metadata'] == {'b': '3'}
    statedb.update_attributes(uuid, {'metadata': {'replace': True,
                                                  'set': {'c': '4'}}})
    assert statedb.get_instance(uuid)['metadata'] == {'c': '4'}


def test_what_fails_changes_nothing(statedb, instances):
    uuid = instances.active()
    statedb.update_attributes(uuid, {'metadata': {'set': {'a': '1'}},
                                     'tags': {'add': ['x']}})
    before = statedb.get_instance(uuid)
    with pytest.raises(exception.NotFound):
        statedb.update_attributes(uuid, {'metadata': {'delete': ['nosuch']},
                                         'name': 'renamed'})
    with pytest.raises(exception.QuotaExceeded, match='metadata_items'):
        statedb.update_attributes(uuid, {'metadata': {'set': {
            'b': '2', 'c': '3'}}}, metadata_items=2)
    with pytest.raises(exception.Invalid, match='per-server limit 50'):
        statedb.update_attributes(uuid, {'tags': {'add': [
            't%d' % i for i in range(50)]}})
    assert statedb.get_instance(uuid) == before


def test_the_check_runs_on_the_row_and_refuses(statedb, instances):
    uuid = instances.active()
    statedb.update_attributes(uuid, {'lock': {'locked': True, 'by': 'admin',
                                              'reason': 'why'}})
    inst = statedb.get_instance(uuid)
    assert (inst['locked'], inst['locked_by'], inst['locked_reason']) == (
        True, 'admin', 'why')

    def refuse(row):
        assert row['locked']
        raise exception.InstanceLocked(instance=uuid)
    with pytest.raises(exception.InstanceLocked):
        statedb.update_attributes(uuid, {'description': 'd'}, check=refuse)
    assert statedb.get_instance(uuid)['description'] is None
    statedb.update_attributes(uuid, {'lock': {'locked': False}})
    inst = statedb.get_instance(uuid)
    assert (inst['locked'], inst['locked_by'], inst['locked_reason']) == (
        False, None, None)


def test_a_deleted_instance_is_not_found(statedb, instances, ctx):
    uuid = instances.active()
    statedb.hard_delete(ctx, uuid)
    with pytest.raises(exception.InstanceNotFound):
        statedb.update_attributes(uuid, {'description': 'd'})


@pytest.mark.parametrize('changes', [{}, {'color': 'red'}, {'tags': ['x']},
                                     {'name': 1}])
def test_malformed_changes_are_refused(changes):
    with pytest.raises(exception.Invalid):
        attributes.validate(changes)


def test_usage_pages_follow_the_first_interval_of_each_instance():
    rows = [{'instance_uuid': u, 'project_id': p} for u, p in (
        ('a', 'p1'), ('b', 'p2'), ('a', 'p1'), ('c', 'p1'), ('d', 'p2'))]
    page, more, last = usage.page(rows, limit=2)
    assert [r['instance_uuid'] for r in page] == ['a', 'b', 'a']
    assert (more, last) == (True, 'b')
    page, more, last = usage.page(rows, marker='b', limit=2)
    assert [r['instance_uuid'] for r in page] == ['c', 'd']
    assert (more, last) == (False, 'd')
    assert usage.page(rows, marker='d', limit=2) == ([], False, None)
    with pytest.raises(exception.Invalid, match='marker'):
        usage.page(rows, marker='nosuch', limit=2)
    assert usage.last_positions(rows) == {'p1': 2, 'p2': 3}
