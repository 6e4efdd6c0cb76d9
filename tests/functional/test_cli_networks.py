"""``tristate network create|list|show|delete`` and ``tristate server
create --network`` against ``tristate-all`` as a separate process (issue
23): an admin defines a network, a member plugs a server into it by name
and sees its address, the network in use is not deleted."""

import pytest

from tests.functional.test_cli import AllInOne
from tests.functional.test_cli import _disk

MEMBER = ('--os-token', 'alice:proj-a')
ADMIN = ('--os-token', 'admin:admin')


@pytest.fixture(scope='module')
def tristate(tmp_path_factory):
    plane = AllInOne(tmp_path_factory.mktemp('tristate-all-networks'))
    try:
        plane.start()
        plane.json(*ADMIN, 'image', 'create', 'base', '--public', '--file',
                   _disk(plane.state_dir / 'base.raw'))
        yield plane
    finally:
        plane.stop()


def test_network_commands_and_a_server_on_a_network(tristate):
    made = tristate.json(*ADMIN, 'network', 'create', 'guests', '--cidr',
                         '10.60.0.0/24', '--bridge', 'br-guests', '--dns',
                         '192.0.2.53', '--mtu', '1450')
    assert (made['gateway'], made['dns'], made['mtu'], made['shared']) == (
        '10.60.0.1', ['192.0.2.53'], 1450, True)
    refused = tristate.run(*MEMBER, 'network', 'create', 'mine', '--cidr',
                           '10.61.0.0/24', '--bridge', 'br1', ok=False)
    assert refused.returncode != 0 and 'Policy' in refused.stderr
    listed = tristate.json(*MEMBER, 'network', 'list')
    assert [(n['Name'], n['CIDR'], n['Bridge']) for n in listed] == [
        ('guests', '10.60.0.0/24', 'br-guests')]
    server = tristate.json(*MEMBER, 'server', 'create', 'web', '--flavor',
                           'tiny', '--image', 'base', '--network', 'guests',
                           '--wait')
    assert server['status'] == 'ACTIVE'
    assert server['addresses'].startswith('guests=10.60.0.')
    shown = tristate.json(*MEMBER, 'network', 'show', 'guests')
    assert shown['tristate:used_ips'] == 1
    busy = tristate.run(*ADMIN, 'network', 'delete', 'guests', ok=False)
    assert busy.returncode != 0 and 'in use' in busy.stderr
    tristate.run(*MEMBER, 'server', 'delete', server['id'])
    tristate.run(*ADMIN, 'network', 'delete', 'guests')
    assert tristate.json(*MEMBER, 'network', 'list') == []
