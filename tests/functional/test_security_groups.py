"""Security groups as Tristate offers them (issue 22; common/secgroups.py):
one group, ``default`` (all traffic), or none (the guest's links down),
through python-novaclient and the real ``openstack`` command line, on the
fake hypervisor: Nova's answers (202, 404 for a group that does not exist,
for one the server is not in, for a server with no port; 400 for an empty
name), the server view's ``security_groups`` (absent in no group, as
Nova), and the domain's cards following the group.
"""

import uuid as uuidlib

from novaclient import exceptions as nova_exc
import pytest

from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional import client_support
from tests.functional import fake_keystone
from tests.functional import osc_support
from tests.functional import test_networks_clients as net_clients
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for
from tests.images_support import IMAGE

DEFAULT = [{'name': 'default'}]


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


@pytest.fixture(scope='module')
def net(shared_plane):
    return shared_plane.statedb.create_network(
        {'name': 'guests', 'cidr': '10.40.0.0/24', 'bridge': 'br-guests'},
        network_id=str(uuidlib.uuid4()))


@pytest.fixture(scope='module')
def token(net):
    return api_support.new_project()


@pytest.fixture(scope='module')
def nova(url, token):
    return client_support.nova(url, token, '2.1')


def _active(nova, server):
    wait_for(lambda: nova.servers.get(server.id).status == 'ACTIVE',
             what='server %s ACTIVE' % server.id)
    return nova.servers.get(server.id)


def _links(plane, server):
    rec = domain(plane, getattr(server, 'OS-EXT-SRV-ATTR:host', None)
                 or plane.statedb.get_instance(server.id)['host'], server.id)
    return [port['security_groups'] for port in rec['ports']]


def test_remove_and_add_the_default_group(shared_plane, nova):
    made = nova.servers.create('sg', IMAGE, 'tiny')
    assert made.security_groups == DEFAULT        # the create's answer
    server = _active(nova, made)
    assert server.security_groups == DEFAULT
    assert _links(shared_plane, server) == [['default']]
    assert [g.name for g in nova.servers.list_security_group(server)] == [
        'default']

    nova.servers.remove_security_group(server, 'default')
    shown = nova.servers.get(server.id)
    assert not hasattr(shown, 'security_groups')      # as Nova: no key
    assert shown.status == 'ACTIVE'
    assert _links(shared_plane, server) == [[]]        # its card is down
    assert nova.servers.list_security_group(server) == []
    # not in it any more: Nova's 404
    with pytest.raises(nova_exc.NotFound, match='not associated'):
        nova.servers.remove_security_group(server, 'default')

    nova.servers.add_security_group(server, 'default')
    assert nova.servers.get(server.id).security_groups == DEFAULT
    assert _links(shared_plane, server) == [['default']]
    # already in it: 202, nothing run
    before = len(nova.instance_action.list(server))
    nova.servers.add_security_group(server, 'default')
    assert len(nova.instance_action.list(server)) == before
    assert [a.action for a in nova.instance_action.list(server)].count(
        'set_security_groups') == 2


def test_nova_errors(nova, url, token):
    server = _active(nova, nova.servers.create('sg-errors', IMAGE, 'tiny'))
    with pytest.raises(nova_exc.NotFound, match='web is not found'):
        nova.servers.add_security_group(server, 'web')
    with pytest.raises(nova_exc.NotFound, match='web is not found'):
        nova.servers.remove_security_group(server, 'web')
    with pytest.raises(nova_exc.BadRequest, match='cannot be empty'):
        nova.servers.add_security_group(server, '  ')
    with pytest.raises(nova_exc.BadRequest, match='name'):
        nova.servers.add_security_group(server, '')
    with pytest.raises(nova_exc.NotFound):
        nova.servers.add_security_group(str(uuidlib.uuid4()), 'default')
    # a server with no port has no groups (Nova with Neutron)
    bare = client_support.nova(url, token, '2.37')
    portless = _active(bare, bare.servers.create('sg-none', IMAGE, 'tiny',
                                                 nics='none'))
    assert not hasattr(portless, 'security_groups')
    with pytest.raises(nova_exc.NotFound, match='any ports'):
        bare.servers.remove_security_group(portless, 'default')
    assert nova.servers.get(server.id).security_groups == DEFAULT


def test_changing_groups_or_rules_is_a_400_not_supported_yet(shared_plane):
    """Nova's proxy routes that create, change or delete a group or a rule:
    a 400 saying so below 2.36 (they were a 405), Nova's 404 after; the
    one group is unchanged."""
    api = api_support.Api(api_support.make_app(shared_plane),
                          token=api_support.ADMIN_TOKEN)
    [group] = api.get('/os-security-groups',
                      version='2.1').json['security_groups']
    group_path = '/os-security-groups/%s' % group['id']
    rule_path = '/os-security-group-rules/%s' % group['rules'][0]['id']
    for method, path, body, what in (
            ('POST', '/os-security-groups', {'security_group': {
                'name': 'web', 'description': 'd'}}, 'Creating a security'),
            ('PUT', group_path, {'security_group': {
                'name': 'web', 'description': 'd'}}, 'Changing a security'),
            ('DELETE', group_path, None, 'Deleting a security group'),
            ('POST', '/os-security-group-rules', {'security_group_rule': {
                'parent_group_id': group['id'], 'ip_protocol': 'tcp',
                'from_port': 22, 'to_port': 22, 'cidr': '0.0.0.0/0'}},
             'Adding a security group rule'),
            ('DELETE', rule_path, None, 'Deleting a security group rule')):
        resp = api.request(method, path, json=body, version='2.35')
        assert resp.status_code == 400, (method, path, resp.json)
        message = resp.json['badRequest']['message']
        assert message.startswith(what) and 'not supported yet' in message
        assert api.request(method, path, json=body,
                           version='2.36').status_code == 404
    assert api.get(group_path, version='2.1').json['security_group'] == group


def test_a_stopped_server_and_a_create_with_no_groups(shared_plane, nova):
    server = _active(nova, nova.servers.create('sg-stop', IMAGE, 'tiny',
                                               security_groups=[]))
    assert server.security_groups == DEFAULT       # none asked: default
    nova.servers.stop(server)
    wait_for(lambda: nova.servers.get(server.id).status == 'SHUTOFF',
             what='stopped')
    nova.servers.remove_security_group(server, 'default')
    assert not hasattr(nova.servers.get(server.id), 'security_groups')
    assert _links(shared_plane, server) == [[]]
    nova.servers.start(server)
    assert _active(nova, server).status == 'ACTIVE'
    assert _links(shared_plane, server) == [[]]    # still down after start


@pytest.fixture(scope='module')
def osc_cloud(tmp_path_factory, url, net):
    """A cloud for ``openstack`` with a compute endpoint and no network
    one (nova-network's way: groups from ``os-security-groups``), and the
    token of its project for novaclient."""
    suffix = uuidlib.uuid4().hex[:8]
    keystone = fake_keystone.FakeKeystone(user='u-' + suffix,
                                          project='p-' + suffix)
    keystone.register('compute', url + '/v2.1')
    keystone.register('image', url + '/image')
    keystone.register('identity', keystone.url)
    keystone.start()
    home = tmp_path_factory.mktemp('osc-sg')
    (home / 'clouds.yaml').write_text(net_clients.CLOUD.format(
        auth_url=keystone.url, user=keystone.user, project=keystone.project))
    yield home, '%s:%s' % (keystone.user, keystone.project)
    keystone.stop()


def test_openstackclient_remove_and_add(osc_cloud, url):
    """``openstack server remove|add security group`` (which look the
    group up in ``os-security-groups`` at 2.1) and ``server show``."""
    home, token = osc_cloud
    nova = client_support.nova(url, token, '2.1')
    server = _active(nova, nova.servers.create('osc-sg', IMAGE, 'tiny'))
    osc_support.osc(home, 'server', 'remove', 'security', 'group',
                    server.id, 'default', parse=False)
    assert 'security_groups' not in osc_support.osc(home, 'server', 'show',
                                                    server.id)
    osc_support.osc(home, 'server', 'add', 'security', 'group', server.id,
                    'default', parse=False)
    assert nova.servers.get(server.id).security_groups == DEFAULT


def test_an_offloaded_server_changes_its_ports_and_unshelves_cut_off(
        conf, make_plane):
    """An offloaded server has no domain: the task changes its ports alone
    and ends at once; the unshelve builds it with its card down."""
    set_opts(conf, 'compute', shelved_offload_time=0)
    plane = make_plane(hosts=1)
    plane.statedb.create_network(
        {'name': 'n', 'cidr': '10.41.0.0/24', 'bridge': 'br-n'},
        network_id=str(uuidlib.uuid4()))
    api = api_support.Api(api_support.make_app(plane),
                          token=api_support.ADMIN_TOKEN)
    server = api.active(name='shelved')
    api.action(server['id'], {'shelve': None})
    wait_for(lambda: api.settled(server['id'])['status'] ==
             'SHELVED_OFFLOADED', what='offloaded')
    resp = api.action(server['id'], {'removeSecurityGroup': {
        'name': 'default'}})
    assert resp.status_code == 202
    assert 'security_groups' not in api.server(server['id'], version='2.1')
    api.action(server['id'], {'unshelve': None})
    wait_for(lambda: api.settled(server['id'])['status'] == 'ACTIVE',
             what='unshelved')
    inst = plane.statedb.get_instance(server['id'])
    assert [p['security_groups'] for p in domain(
        plane, inst['host'], server['id'])['ports']] == [[]]


def test_a_driver_failure_is_nova_409_and_keeps_the_group(shared_plane,
                                                          nova):
    server = _active(nova, nova.servers.create('sg-fail', IMAGE, 'tiny'))
    host = shared_plane.statedb.get_instance(server.id)['host']
    fake.HostStore(shared_plane.conf.state_dir, host).set_fault(
        'set_security_groups', 'fail', count=1)
    with pytest.raises(nova_exc.Conflict,
                       match='security groups of server %s could not be '
                             'changed' % server.id):
        nova.servers.remove_security_group(server, 'default')
    wait_for(lambda: nova.servers.get(server.id).status == 'ACTIVE',
             what='server %s ACTIVE again' % server.id)
    assert nova.servers.get(server.id).security_groups == DEFAULT
    assert _links(shared_plane, server) == [['default']]
