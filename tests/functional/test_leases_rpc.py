"""RPC versions for leases: conductor API 1.1 added ``reservation_id`` to
create_instance and the ``leases`` namespace. A client capped at 1.0
(``[upgrade_levels] conductor``, a rolling upgrade) sends create_instance
as 1.0 without the new argument, and refuses, with the reason, what only
1.1 can do; uncapped, both work."""

import pytest

from common import exception
from common.states import vm
from conductor import manager as conductor_manager
from conductor import rpcapi as conductor_rpcapi
from conductor.leases import manager as lease_manager
from conductor.leases import rpcapi as lease_rpcapi
from tests.functional.conftest import reservable
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_idle

BODY = {'name': 'l', 'start_date': 'now', 'end_date': '2099-01-01 00:00',
        'reservations': [{'resource_type': 'physical:host', 'min': 1,
                          'max': 1}]}


def _version(text):
    return tuple(int(part) for part in text.split('.'))


def test_client_and_server_versions_agree():
    assert conductor_rpcapi.VERSION == (
        conductor_manager.ConductorManager.target.version)
    # the conductor serves leases from 1.1 on
    assert _version(conductor_rpcapi.VERSION) >= _version(
        lease_rpcapi.NEEDS_CONDUCTOR_VERSION)
    assert lease_rpcapi.VERSION == lease_manager.LeaseManager.target.version
    assert lease_manager.LeaseManager.target.namespace == (
        lease_rpcapi.NAMESPACE)


class Spy:
    """Records the version and arguments of every call a client sends."""

    def __init__(self, client, monkeypatch):
        self.sent = []
        prepare = client.prepare

        def spying_prepare(**kwargs):
            context = prepare(**kwargs)
            call = context.call

            def spying_call(ctx, method, **args):
                self.sent.append((context.target.version,
                                  context.target.namespace, method,
                                  sorted(args)))
                return call(ctx, method, **args)
            context.call = spying_call
            return context
        monkeypatch.setattr(client, 'prepare', spying_prepare)


def test_a_client_capped_at_1_0(conf, make_plane, ctx, monkeypatch):
    set_opts(conf, 'upgrade_levels', conductor='1.0')
    plane = make_plane(hosts=1)
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    spy = Spy(capped.client, monkeypatch)

    inst = capped.create_instance(ctx, name='vm', flavor='tiny',
                                  image_ref='cirros')
    assert wait_idle(plane, inst['uuid'])['vm_state'] == vm.ACTIVE
    assert spy.sent == [('1.0', None, 'create_instance',
                         ['flavor', 'image_ref', 'name', 'policies'])]

    with pytest.raises(exception.ServiceUnavailable) as err:
        capped.create_instance(ctx, name='vm2', flavor='tiny',
                               image_ref='cirros', reservation_id='r1')
    assert 'needs conductor RPC API 1.1' in err.value.message
    assert 'caps it at 1.0' in err.value.message
    with pytest.raises(exception.ServiceUnavailable) as err:
        lease_rpcapi.LeaseAPI(capped).create_lease(ctx, BODY)
    assert 'leases need conductor RPC API 1.1' in err.value.message
    assert len(spy.sent) == 1                       # nothing else was sent
    assert [i['name'] for i in plane.statedb.list_instances()] == ['vm']
    assert plane.conductor.leases.db.list_leases() == []


def test_an_uncapped_client_sends_1_1_only_when_needed(plane, ctx,
                                                       monkeypatch):
    reservable(plane)
    client = plane.client
    spy = Spy(client.client, monkeypatch)
    leases = lease_rpcapi.LeaseAPI(client)
    lease = leases.create_lease(ctx, BODY)
    plane.conductor.leases.periodic.run_once()
    res_id = lease['reservations'][0]['id']
    inst = client.create_instance(ctx, name='vm', flavor='tiny',
                                  image_ref='cirros', reservation_id=res_id)
    placed = wait_idle(plane, inst['uuid'])
    assert (placed['vm_state'], placed['host']) == (
        vm.ACTIVE, lease['reservations'][0]['hosts'][0])
    client.create_instance(ctx, name='vm2', flavor='tiny', image_ref='cirros')
    assert spy.sent == [
        ('1.0', 'leases', 'create_lease', ['lease']),
        ('1.1', None, 'create_instance',
         ['flavor', 'image_ref', 'name', 'policies', 'reservation_id']),
        ('1.0', None, 'create_instance',
         ['flavor', 'image_ref', 'name', 'policies'])]
