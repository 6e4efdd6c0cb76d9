"""Flavors and quota classes in the database, on SQLite and PostgreSQL:
the configured flavors seeded once (a deleted one stays deleted, even when
seeding again), ids and names unique among the flavors not deleted, a
deleted flavor's id still known by name, the access list of a private
flavor, extra specs, and the default quota class over ``[quota]``."""

import pytest

from common import context
from common import exception
from common import flavors
from common.db import quota_classes
from common.db import quotas
from tests.unit.db.test_concurrency import _race

CONFIGURED = ['tiny:1:512:1', 'small:1:2048:20']


def _seed(statedb, definitions=CONFIGURED):
    statedb.seed_flavors(list(flavors.parse(definitions).values()))


def _ids(statedb, **kwargs):
    return [f['flavorid'] for f in statedb.list_flavors(**kwargs)]


def test_configured_flavors_are_seeded_once(statedb):
    outcomes = _race(6, lambda i: _seed(statedb))
    assert all(kind == 'ok' for kind, _ in outcomes), outcomes
    assert _ids(statedb) == ['small', 'tiny']
    statedb.delete_flavor('tiny')
    _seed(statedb, CONFIGURED + ['large:4:8192:80'])
    assert _ids(statedb) == ['large', 'small']


def test_ids_and_names_are_unique_among_live_flavors(statedb):
    statedb.create_flavor(flavorid='a', name='one', vcpus=1, memory_mb=64,
                          disk_gb=0)
    with pytest.raises(exception.Conflict, match='ID a already exists'):
        statedb.create_flavor(flavorid='a', name='two', vcpus=1,
                              memory_mb=64, disk_gb=0)
    with pytest.raises(exception.Conflict, match='name one already exists'):
        statedb.create_flavor(flavorid='b', name='one', vcpus=1,
                              memory_mb=64, disk_gb=0)
    statedb.delete_flavor('a')
    with pytest.raises(exception.NotFound):
        statedb.delete_flavor('a')
    # a deleted flavor's servers still link it by id
    assert statedb.flavor_ids()['one'] == 'a'
    again = statedb.create_flavor(flavorid='a', name='one', vcpus=2,
                                  memory_mb=128, disk_gb=1)
    assert again['vcpus'] == 2 and statedb.get_flavor('a')['vcpus'] == 2


def test_private_flavors_and_who_may_boot_them(statedb, conf):
    statedb.create_flavor(flavorid='p', name='p', vcpus=1, memory_mb=64,
                          disk_gb=0, is_public=False)
    assert 'p' not in _ids(statedb, project_id='demo')
    assert 'p' in _ids(statedb, is_public=None)
    member = context.RequestContext(user_id='u', project_id='demo')
    admin = context.RequestContext(user_id='a', project_id='x',
                                   is_admin=True)
    conf.set_override('flavors', [], group='conductor')
    with pytest.raises(exception.Invalid, match="unknown flavor 'p'"):
        flavors.get(conf, statedb, 'p', member)
    assert flavors.get(conf, statedb, 'p', admin).name == 'p'
    statedb.add_flavor_access('p', 'demo')
    assert 'p' in _ids(statedb, project_id='demo')
    assert flavors.get(conf, statedb, 'p', member).memory_mb == 64
    with pytest.raises(exception.Conflict):
        statedb.add_flavor_access('p', 'demo')
    statedb.remove_flavor_access('p', 'demo')
    with pytest.raises(exception.NotFound):
        statedb.remove_flavor_access('p', 'demo')


def test_extra_specs(statedb):
    statedb.create_flavor(flavorid='x', name='x', vcpus=1, memory_mb=64,
                          disk_gb=0)
    statedb.set_extra_specs('x', {'a': '1', 'b': '2'})
    statedb.set_extra_specs('x', {'a': '3'})
    assert statedb.get_flavor('x')['extra_specs'] == {'a': '3', 'b': '2'}
    statedb.delete_extra_spec('x', 'b')
    with pytest.raises(exception.NotFound, match='no extra specs with key b'):
        statedb.delete_extra_spec('x', 'b')
    assert statedb.list_flavors()[0]['extra_specs'] == {'a': '3'}


def test_default_quota_class_is_over_the_options(statedb, ctx):
    settings = quotas.Settings(dict.fromkeys(quotas.LIMITS, 5))
    statedb.quota = settings
    assert statedb.get_quota_class('default')['instances'] == 5
    assert statedb.get_quota_class('default')['key_pairs'] == (
        quota_classes.NOVA_ONLY['key_pairs'])
    statedb.set_quota_class('default', {'instances': 1, 'key_pairs': 3})
    statedb.set_quota_class('gold', {'instances': 50})
    assert statedb.get_quotas('demo')['limits']['instances'] == 1
    assert statedb.get_quotas('demo')['defaults']['cores'] == 5
    statedb.set_quotas('demo', {'instances': 2})
    assert statedb.get_quotas('demo')['limits']['instances'] == 2
    assert statedb.get_quotas('other')['limits']['instances'] == 1
