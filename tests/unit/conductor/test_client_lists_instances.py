"""The conductor client's ``list_instances``: with database access (the API
tier) it reads the rows itself, with the conductor's checks, and never
waits for the bus (``GET /servers/detail`` of a thousand servers no longer
sends them through the conductor); without, it asks the conductor."""

import types

import pytest

from common import context
from common import exception
from conductor import rpcapi
from tests.conftest import FLAVOR


class _Bus:
    """A bus whose calls are recorded and answered with ``answer``."""

    def __init__(self, answer=None):
        self.calls = []
        self.answer = answer

    def client(self, topic, version, **kwargs):
        return self

    def prepare(self, **kwargs):
        return self

    def call(self, ctx, method, **kwargs):
        self.calls.append((method, kwargs))
        return self.answer


CONF = types.SimpleNamespace(
    conductor=types.SimpleNamespace(topic='conductor'),
    upgrade_levels=types.SimpleNamespace(conductor=None))


@pytest.fixture
def listed(statedb, instances, ctx):
    """{name: uuid}: two of ``ctx``'s project, one hard-deleted, and one
    of another project."""
    names = {name: instances.active() for name in ('a', 'b', 'gone')}
    statedb.hard_delete(ctx, names['gone'])
    other = context.RequestContext(user_id='bob', project_id='other',
                                   roles=['member'])
    names['theirs'] = statedb.create_instance(other, dict(
        FLAVOR, name='theirs', project_id='other', user_id='bob',
        flavor_name='m1.small', image_ref='cirros'))['uuid']
    return names


def _uuids(rows):
    return sorted(r['uuid'] for r in rows)


def test_with_the_database_it_lists_without_the_conductor(
        statedb, listed, ctx):
    bus = _Bus()
    client = rpcapi.ConductorAPI(bus, CONF, statedb=statedb)

    assert _uuids(client.list_instances(ctx)) == sorted(
        [listed['a'], listed['b']])
    assert _uuids(client.list_instances(ctx, include_deleted=True)) == sorted(
        [listed['a'], listed['b'], listed['gone']])
    admin = ctx.elevated()
    assert _uuids(client.list_instances(admin, all_projects=True)) == sorted(
        [listed['a'], listed['b'], listed['theirs']])
    # all projects: admins only, as the conductor checks
    for deleted in (False, True):
        with pytest.raises(exception.Forbidden):
            client.list_instances(ctx, all_projects=True,
                                  include_deleted=deleted)
    assert bus.calls == []


def test_without_the_database_it_asks_the_conductor(ctx):
    bus = _Bus(answer=[{'uuid': 'u1'}])
    client = rpcapi.ConductorAPI(bus, CONF)

    assert client.list_instances(ctx, all_projects=True) == [{'uuid': 'u1'}]
    assert bus.calls == [('list_instances', {'all_projects': True})]
    with pytest.raises(exception.Invalid):
        client.list_instances(ctx, include_deleted=True)
