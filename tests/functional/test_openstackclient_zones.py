"""Host aggregates, availability zones, server groups and migrations as
an operator
reaches them with the real ``openstack`` command line (issue 25), set up
as tests/functional/test_openstackclient.py does (its fixtures: a two-host
plane of its own for this module, the API over real HTTP, no Keystone),
and novaclient where openstackclient has no command."""

import pytest

from common import context
from tests.functional import api_support
from tests.functional import catalogue_support as support
from tests.functional.conftest import used
from tests.functional.conftest import wait_idle
from tests.functional.test_openstackclient import home  # noqa: F401
from tests.functional.test_openstackclient import osc
from tests.functional.test_openstackclient import TOKENS
from tests.functional.test_openstackclient import osc_fails
from tests.functional.test_openstackclient import plane  # noqa: F401
from tests.functional.test_openstackclient import url  # noqa: F401

ADMIN = 'tristate-admin'


@pytest.fixture(scope='module')
def zone(home):  # noqa: F811
    """Aggregate ``rack-a``, zone ``zone-a``, holding host1, made and
    shown with openstackclient."""
    made = osc(home, 'aggregate', 'create', '--zone', 'zone-a', 'rack-a',
               cloud=ADMIN)
    assert made['availability_zone'] == 'zone-a'
    osc(home, 'aggregate', 'add', 'host', 'rack-a', 'host1', cloud=ADMIN)
    return made


def test_aggregate_set_show_list(home, zone):  # noqa: F811
    osc(home, 'aggregate', 'set', '--property', 'ssd=true', 'rack-a',
        cloud=ADMIN, parse=False)
    shown = osc(home, 'aggregate', 'show', 'rack-a', cloud=ADMIN)
    assert shown['hosts'] == ['host1']
    assert shown['properties'] == {'ssd': 'true'}
    assert shown['availability_zone'] == 'zone-a'
    listed = osc(home, 'aggregate', 'list', '--long', cloud=ADMIN)
    assert [(a['Name'], a['Availability Zone']) for a in listed] == [
        ('rack-a', 'zone-a')]
    refused = osc_fails(home, 'aggregate', 'list')
    assert 'Policy does not allow' in refused, refused


def test_aggregate_host_remove_and_delete(home, zone):  # noqa: F811
    osc(home, 'aggregate', 'create', 'spare', cloud=ADMIN)
    osc(home, 'aggregate', 'add', 'host', 'spare', 'host2', cloud=ADMIN)
    refused = osc_fails(home, 'aggregate', 'delete', 'spare', cloud=ADMIN)
    assert 'not empty' in refused, refused
    removed = osc(home, 'aggregate', 'remove', 'host', 'spare', 'host2',
                  cloud=ADMIN)
    assert removed['hosts'] == []
    osc(home, 'aggregate', 'delete', 'spare', cloud=ADMIN, parse=False)
    names = [a['Name'] for a in osc(home, 'aggregate', 'list', cloud=ADMIN)]
    assert 'spare' not in names


def test_availability_zone_list(home, zone):  # noqa: F811
    listed = osc(home, 'availability', 'zone', 'list', '--compute')
    assert sorted(z['Zone Name'] for z in listed) == ['nova', 'zone-a']
    detail = osc(home, 'availability', 'zone', 'list', '--compute', '--long',
                 cloud=ADMIN)
    hosts = {(z['Zone Name'], z['Host Name']) for z in detail
             if z['Service Name'] == 'nova-compute'}
    assert hosts == {('zone-a', 'host1'), ('nova', 'host2')}


def test_server_create_in_a_zone_and_migration_list(home, url,  # noqa: F811
                                                    zone):
    made = osc(home, 'server', 'create', '--flavor', 'tiny', '--image',
               api_support.IMAGE, '--availability-zone', 'zone-a', '--wait',
               '--no-network', 'in-zone-a')
    assert made['OS-EXT-AZ:availability_zone'] == 'zone-a'
    shown = osc(home, 'server', 'show', made['id'], cloud=ADMIN)
    assert shown['OS-EXT-SRV-ATTR:host'] == 'host1'
    refused = osc_fails(home, 'server', 'create', '--flavor', 'tiny',
                        '--image', api_support.IMAGE, '--no-network',
                        '--availability-zone', 'nowhere', 'lost')
    assert 'availability zone is not available' in refused, refused
    osc(home, 'server', 'resize', '--flavor', 'small', '--wait', made['id'],
        parse=False)
    # openstackclient's ``server migration list`` asks an identity v3
    # service for every call, which a plane without Keystone has not:
    # novaclient's list instead
    nova = support.nova(url, api_support.ADMIN_TOKEN, '2.23')
    found = nova.migrations.list(instance_uuid=made['id'])
    assert [(m.migration_type, m.status, m.source_compute)
            for m in found] == [('resize', 'finished', 'host1')]
    nova = support.nova(url, api_support.ADMIN_TOKEN, '2.80')
    (found,) = nova.migrations.list(instance_uuid=made['id'])
    assert found.project_id == shown['project_id']


def test_server_group_create_list_show_delete_and_hint(home,  # noqa: F811
                                                       plane):  # noqa: F811
    """``server group create``, ``server create --hint group=``: the
    members of an anti-affinity group land on the two hosts, one each
    (placed before the create answers); the group shows them; ``server
    group delete`` forgets it."""
    made = osc(home, 'server', 'group', 'create', '--policy',
               'anti-affinity', 'spread-me')
    assert made['name'] == 'spread-me'
    assert 'anti-affinity' in str(made.get('policy', made.get('policies')))
    servers = [osc(home, 'server', 'create', '--flavor', 'tiny', '--image',
                   api_support.IMAGE, '--no-network', '--hint',
                   'group=%s' % made['id'], 'member-%d' % n)['id']
               for n in range(2)]
    hosts = {plane.statedb.get_instance(s)['host'] for s in servers}
    assert hosts == {'host1', 'host2'}
    shown = osc(home, 'server', 'group', 'show', made['id'])
    members = shown['members']
    assert sorted(members.split(', ') if isinstance(members, str)
                  else members) == sorted(servers)
    assert [g['Name'] for g in osc(home, 'server', 'group', 'list')] == [
        'spread-me']
    osc(home, 'server', 'group', 'delete', made['id'], parse=False)
    assert osc(home, 'server', 'group', 'list') == []


def test_server_create_hint_same_host(home, plane):  # noqa: F811
    """``server create --hint same_host=`` lands beside the named server
    (placed before the create answers), though another host is emptier:
    the spread weigher alone would not. (The hints' forms, and placement
    by both hints: test_api_host_hints.py, test_host_hints.py.)"""
    user, project = TOKENS['tristate'].split(':')
    # the named server on the fuller host (an admin's forced host, in the
    # project of openstackclient's cloud): spread alone would go elsewhere
    host = max(plane.host_names, key=lambda h: (used(plane, h)[1], h))
    first = plane.client.create_instance(
        context.RequestContext(user_id=user, project_id=project).elevated(),
        name='first', flavor='tiny', image_ref=api_support.IMAGE,
        force_host=host)['uuid']
    assert wait_idle(plane, first)['host'] == host
    beside = osc(home, 'server', 'create', '--flavor', 'tiny', '--image',
                 api_support.IMAGE, '--no-network', '--hint',
                 'same_host=%s' % first, 'beside')['id']
    assert plane.statedb.get_instance(beside)['host'] == host
