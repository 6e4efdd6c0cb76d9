"""The address management (common/db/networks.py) on SQLite and PostgreSQL:
ports and addresses allocated in the create's transaction, unique under
any concurrency, freed by hard delete and burial, a full network named."""

import ipaddress

import netaddr
import pytest
import sqlalchemy as sa

from common import exception
from common.db import checks
from common.db import models
from tests.conftest import FLAVOR
from tests.unit.db.test_concurrency import _race

I = models.Instance.__table__     # noqa: E741
F = models.FixedIP.__table__
VALUES = dict(FLAVOR, name='vm', project_id='demo', user_id='alice',
              flavor_name='m1.small', image_ref='cirros')


def _net(statedb, name='private', cidr='10.0.0.0/24', **extra):
    return statedb.create_network(dict(name=name, cidr=cidr, bridge='br0',
                                       **extra),
                                  network_id='net-' + name)


def _create(statedb, ctx, networks, **kwargs):
    return statedb.create_instance(ctx, dict(VALUES), networks=networks,
                                   **kwargs)


def test_network_defaults_leave_out_gateway_and_broadcast(statedb):
    net = _net(statedb, dns=['192.0.2.53'], mtu=1450)
    assert (net['gateway'], net['allocation_start'],
            net['allocation_end']) == ('10.0.0.1', '10.0.0.1', '10.0.0.254')
    assert (net['dns'], net['mtu'], net['project_id']) == (
        ['192.0.2.53'], 1450, None)


@pytest.mark.parametrize('bad, field', [
    ({'cidr': '10.0.0.1/24'}, 'cidr'), ({'cidr': '2001:db8::/64'}, 'cidr'),
    ({'gateway': '10.1.0.1'}, 'gateway'), ({'mtu': 10}, 'mtu'),
    ({'allocation_start': '10.0.0.200', 'allocation_end': '10.0.0.100'},
     'allocation_start'), ({'bridge': None}, 'bridge'),
    ({'dns': ['nameserver']}, 'dns'), ({'colour': 'red'}, 'colour')])
def test_bad_network_is_refused_naming_the_field(statedb, bad, field):
    values = dict(name='n', cidr='10.0.0.0/24', bridge='br0')
    values.update(bad)
    with pytest.raises(exception.Invalid, match=field):
        statedb.create_network(values, network_id='n')
    assert statedb.list_networks() == []


def test_create_allocates_port_and_delete_frees_it(statedb, ctx):
    _net(statedb, ipv6_cidr='2001:db8::/64')
    inst = _create(statedb, ctx, [{'uuid': 'net-private'}])
    [port] = inst['ports']
    assert port['mac'].startswith('fa:16:3e:')
    assert port['network']['bridge'] == 'br0'
    v4, v6 = port['fixed_ips']
    assert ipaddress.ip_address(v4['address']) in ipaddress.ip_network(
        '10.0.0.0/24') and v4['address'] != '10.0.0.1'
    # SLAAC's modified EUI-64, as netaddr computes it
    assert v6 == {'version': 6, 'address': str(netaddr.EUI(
        port['mac']).ipv6(netaddr.IPNetwork('2001:db8::/64').first))}
    shown = statedb.addresses_of([inst['uuid']])[inst['uuid']]['private']
    assert [a['addr'] for a in shown] == [v4['address'], v6['address']]
    assert statedb.ports_of(inst['uuid']) == inst['ports']
    statedb.hard_delete(ctx, inst['uuid'])
    assert statedb.addresses_of([inst['uuid']]) == {}
    assert statedb.network_usage('net-private') == 0


def test_fixed_ip_taken_refuses_the_create(statedb, ctx):
    _net(statedb)
    _create(statedb, ctx, [{'uuid': 'net-private', 'fixed_ip': '10.0.0.9'}])
    with pytest.raises(exception.FixedIpInUse, match='10.0.0.9'):
        _create(statedb, ctx, [{'uuid': 'net-private',
                                'fixed_ip': '10.0.0.9'}])
    assert len(statedb.list_instances()) == 1


def test_auto_none_default_and_ambiguous(statedb, ctx):
    assert _create(statedb, ctx, 'auto')['ports'] == []
    _net(statedb)
    assert len(_create(statedb, ctx, 'auto')['ports']) == 1
    assert _create(statedb, ctx, 'none')['ports'] == []
    _net(statedb, 'other', '10.1.0.0/24')
    with pytest.raises(exception.NetworkAmbiguous):
        _create(statedb, ctx, None)
    [port] = _create(statedb, ctx, 'auto', default_network='other')['ports']
    assert port['network']['name'] == 'other'
    # another project's network is not found
    _net(statedb, 'theirs', '10.2.0.0/24', project_id='them')
    with pytest.raises(exception.Invalid, match='net-theirs'):
        _create(statedb, ctx, [{'uuid': 'net-theirs'}])


def test_full_network_is_named_and_holds_nothing(statedb, ctx):
    _net(statedb, cidr='10.0.0.0/29')       # .2-.6 usable: five
    made = [_create(statedb, ctx, [{'uuid': 'net-private'}])
            for _ in range(5)]
    assert len({i['ports'][0]['fixed_ips'][0]['address']
                for i in made}) == 5
    full = _create(statedb, ctx, [{'uuid': 'net-private'}])
    assert full['no_address'] == 'no free address on network private'
    assert full['ports'] == [] and statedb.ports_of(full['uuid']) == []
    statedb.hard_delete(ctx, made[0]['uuid'])
    assert len(_create(statedb, ctx, [{'uuid': 'net-private'}])[
        'ports']) == 1


def test_concurrent_creates_never_share_an_address(statedb, ctx):
    _net(statedb, cidr='10.0.0.0/28')       # 13 usable
    outcomes = _race(20, lambda i: _create(statedb, ctx,
                                           [{'uuid': 'net-private'}]))
    made = [v for kind, v in outcomes if kind == 'ok']
    assert len(made) == 20, outcomes
    got = [i['ports'][0]['fixed_ips'][0]['address'] for i in made
           if i['ports']]
    assert len(got) == len(set(got)) == 13
    assert sum(1 for i in made if i['no_address']) == 7
    macs = [i['ports'][0]['mac'] for i in made if i['ports']]
    assert len(set(macs)) == 13


def test_burial_frees_and_rebuild_allocates_again(statedb, ctx):
    _net(statedb)
    inst = _create(statedb, ctx, [{'uuid': 'net-private',
                                   'fixed_ip': '10.0.0.7'}])
    task = ctx.for_task(inst['task_id'])
    statedb.bury(task, inst['uuid'], reason='no valid host', use_pending=True)
    assert statedb.ports_of(inst['uuid']) == []
    claimed = statedb.claim_task(ctx, inst['uuid'], 'rebuild')
    [port] = statedb.allocate_requested(ctx.for_task(claimed['task_id']),
                                        inst['uuid'])
    assert port['fixed_ips'] == [{'address': '10.0.0.7', 'version': 4}]


def test_network_in_use_is_not_deleted(statedb, ctx):
    _net(statedb)
    inst = _create(statedb, ctx, [{'uuid': 'net-private'}])
    with pytest.raises(exception.NetworkInUse):
        statedb.delete_network('net-private')
    statedb.hard_delete(ctx, inst['uuid'])
    statedb.delete_network('net-private')
    assert statedb.list_networks() == []


# --- tristate-manage check ------------------------------------------------------

def _violations(statedb):
    found, seen = checks.find_violations(statedb.db,
                                         checks.Limits(now=statedb.clock()))
    return [str(v) for v in found], seen


def test_check_flags_addresses_held_wrongly(statedb, ctx):
    _net(statedb)
    _net(statedb, 'same-l2', '10.0.0.0/25')     # same bridge, overlapping
    # fixed addresses: a free pick could be the 10.0.0.5 asked for below
    kept = _create(statedb, ctx, [{'uuid': 'net-private',
                                   'fixed_ip': '10.0.0.10'}])
    assert _violations(statedb)[0] == []
    assert _violations(statedb)[1]['addresses'] == 1
    # a delete that did not free (made by hand: the delete frees)
    gone = _create(statedb, ctx, [{'uuid': 'net-private',
                                   'fixed_ip': '10.0.0.11'}])
    statedb.db.transaction(lambda conn: conn.execute(sa.update(I).where(
        I.c.uuid == gone['uuid']).values(vm_state='hard_deleted')))
    twice = [_create(statedb, ctx, [{'uuid': net, 'fixed_ip': '10.0.0.5'}])
             for net in ('net-private', 'net-same-l2')]
    statedb.db.transaction(lambda conn: conn.execute(sa.update(F).where(
        F.c.port_id == kept['ports'][0]['id']).values(
            address='192.168.1.1')))
    found = [v for v in _violations(statedb)[0] if 'address' in v]
    assert len(found) == 3, found
    assert any(gone['uuid'] in v and 'held by a hard-deleted instance' in v
               for v in found)
    assert any('10.0.0.5 is held twice on br0' in v and twice[0]['uuid'] in v
               and twice[1]['uuid'] in v for v in found)
    assert any('192.168.1.1 is outside network private' in v for v in found)
