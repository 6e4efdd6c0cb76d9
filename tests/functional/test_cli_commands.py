"""The ``tristate`` command line's list filters and its quota, usage,
hypervisor and server event commands, against ``tristate-all`` started as a
separate process with ``[api] max_limit = 2`` (so that every list longer
than two servers is read page by page): two projects' servers, each
project's user by noauth's ``USER:PROJECT`` token, the admin by
``admin:admin``."""

import pytest
import requests

from tests.functional.test_cli import AllInOne
from tests.functional.test_cli import _disk
from tests.unit.compute_agent.test_configdrive import read

ALICE = ('--os-token', 'alice:proj-a')
BOB = ('--os-token', 'bob:proj-b')
ADMIN = ('--os-token', 'admin:admin')


@pytest.fixture(scope='module')
def tristate(tmp_path_factory):
    plane = AllInOne(tmp_path_factory.mktemp('tristate-all-cli'))
    (plane.state_dir / 'empty.conf').write_text('[api]\nmax_limit = 2\n')
    try:
        plane.start()
        plane.json(*ADMIN, 'image', 'create', 'base', '--public', '--file',
                   _disk(plane.state_dir / 'base.raw'))
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope='module')
def servers(tristate):
    """Three of alice's servers and one of bob's, all ACTIVE."""
    made = {}
    for who, name in ((ALICE, 'web-1'), (ALICE, 'web-2'), (ALICE, 'db-1'),
                      (BOB, 'web-b')):
        made[name] = tristate.json(*who, 'server', 'create', name, '--flavor',
                                   'tiny', '--image', 'base', '--wait')
    return made


def _names(rows):
    return sorted(r['Name'] for r in rows)


def test_server_list_reads_every_page(tristate, servers):
    # three servers, pages of two: all of them
    assert _names(tristate.json(*ALICE, 'server', 'list')) == [
        'db-1', 'web-1', 'web-2']
    assert _names(tristate.json(*ADMIN, 'server', 'list',
                                '--all-projects')) == [
        'db-1', 'web-1', 'web-2', 'web-b']


def test_server_list_filters(tristate, servers):
    assert _names(tristate.json(*ALICE, 'server', 'list', '--name',
                                '^web')) == ['web-1', 'web-2']
    assert _names(tristate.json(*ALICE, 'server', 'list', '--status',
                                'ACTIVE')) == ['db-1', 'web-1', 'web-2']
    assert tristate.json(*ALICE, 'server', 'list', '--status',
                         'SHUTOFF') == []
    # --project: the admin sees that project's only
    assert _names(tristate.json(*ADMIN, 'server', 'list', '--project',
                                'proj-b')) == ['web-b']
    # --host: the admin, by where each server runs
    hosts = {s['Name']: s['Host'] for s in tristate.json(
        *ADMIN, 'server', 'list', '--all-projects')}
    for host in set(hosts.values()):
        on_host = tristate.json(*ADMIN, 'server', 'list', '--all-projects',
                                '--host', host)
        assert _names(on_host) == sorted(n for n, h in hosts.items()
                                         if h == host)


def test_server_list_limit_and_marker(tristate, servers):
    listed = tristate.json(*ALICE, 'server', 'list')
    assert len(tristate.json(*ALICE, 'server', 'list', '--limit', '1')) == 1
    assert tristate.json(*ALICE, 'server', 'list', '--limit', '3') == listed
    assert tristate.json(*ALICE, 'server', 'list', '--limit', '0') == []
    after = tristate.json(*ALICE, 'server', 'list', '--marker',
                          listed[0]['ID'])
    assert after == listed[1:]
    refused = tristate.run(*ALICE, 'server', 'list', '--limit', '-1',
                           ok=False)
    assert refused.returncode == 1 and '--limit must be >= 0' in (
        refused.stderr)


def test_quota_show_and_set(tristate, servers):
    # the project of the token, by default; -1 is unlimited
    mine = tristate.json(*ALICE, 'quota', 'show')
    assert mine['project'] == 'proj-a' and mine['instances'] == -1
    used = tristate.json(*ALICE, 'quota', 'show', '--usage')
    assert used['instances'] == '3/-1'
    assert tristate.json(*ALICE, 'quota', 'show', '--default')[
        'cores'] == -1
    # only the admin sets; the member then sees the new limits
    denied = tristate.run(*ALICE, 'quota', 'set', '--project', 'proj-a',
                          '--instances', '3', ok=False)
    assert denied.returncode == 1 and 'HTTP 403' in denied.stderr
    changed = tristate.json(*ADMIN, 'quota', 'set', '--project', 'proj-a',
                            '--instances', '3', '--cores', '10')
    assert (changed['instances'], changed['cores']) == (3, 10)
    assert tristate.json(*ALICE, 'quota', 'show')['instances'] == 3
    full = tristate.run(*ALICE, 'server', 'create', 'one-too-many',
                        '--flavor', 'tiny', '--image', 'base', ok=False)
    assert full.returncode == 1 and 'Quota exceeded for instances' in (
        full.stderr)
    tristate.json(*ADMIN, 'quota', 'set', '--project', 'proj-a',
                  '--instances', '-1', '--cores', '-1')
    nothing = tristate.run(*ADMIN, 'quota', 'set', '--project', 'proj-a',
                           ok=False)
    assert nothing.returncode == 1 and 'Nothing to set' in nothing.stderr


def test_quota_without_a_project_says_what_to_set(tristate):
    # no token: the API's default user, whose project the CLI cannot know
    done = tristate.run('quota', 'show', ok=False)
    assert done.returncode == 1 and 'Give --project' in done.stderr


def test_usage_show_and_list(tristate, servers):
    period = ('--start', '2020-01-01T00:00:00')
    mine = tristate.json(*ALICE, 'usage', 'show', *period)
    assert (mine['Project'], mine['Servers']) == ('proj-a', 3)
    every = {u['Project']: u for u in tristate.json(*ADMIN, 'usage', 'list',
                                                    *period)}
    assert every['proj-a']['Servers'] == 3 and every['proj-b'][
        'Servers'] == 1
    denied = tristate.run(*ALICE, 'usage', 'list', ok=False)
    assert denied.returncode == 1 and 'HTTP 403' in denied.stderr


def test_hypervisor_list_and_show(tristate, servers):
    listed = tristate.json(*ADMIN, 'hypervisor', 'list', '--long')
    assert sorted(h['Hypervisor Hostname'] for h in listed) == [
        'host1', 'host2']
    assert sum(h['Instances'] for h in listed) == 4
    one = listed[0]
    by_name = tristate.json(*ADMIN, 'hypervisor', 'show',
                            one['Hypervisor Hostname'])
    by_id = tristate.json(*ADMIN, 'hypervisor', 'show', str(one['ID']))
    # the same hypervisor; a heartbeat between the two may change its
    # figures (uptime, free memory), not which fields it shows
    assert (by_id['id'], by_id['hypervisor_hostname'], sorted(by_id)) == (
        by_name['id'], by_name['hypervisor_hostname'], sorted(by_name))
    assert by_name['hypervisor_hostname'] == one['Hypervisor Hostname']
    missing = tristate.run(*ADMIN, 'hypervisor', 'show', 'nowhere', ok=False)
    assert missing.returncode == 1 and "'nowhere'" in missing.stderr
    assert 'HTTP 403' in tristate.run(*ALICE, 'hypervisor', 'list',
                                      ok=False).stderr


def test_server_event_list_and_show(tristate, servers):
    tristate.json(*ALICE, 'server', 'stop', 'db-1', '--wait')
    events = tristate.json(*ALICE, 'server', 'event', 'list', 'db-1')
    assert [e['Action'] for e in events] == ['stop', 'create']  # newest 1st
    assert {e['Result'] for e in events} == {'success'}
    shown = tristate.json(*ALICE, 'server', 'event', 'show', 'db-1',
                          events[0]['Request ID'])
    assert (shown['action'], shown['instance_uuid']) == (
        'stop', servers['db-1']['id'])
    assert 'tristate_stop' in shown['events']
    missing = tristate.run(*ALICE, 'server', 'event', 'show', 'db-1',
                           'no-such-request', ok=False)
    assert missing.returncode == 1 and 'HTTP 404' in missing.stderr


def test_aggregate_and_availability_zone_commands(tristate, servers):
    made = tristate.json(*ADMIN, 'aggregate', 'create', '--zone', 'east',
                         'rack-1')
    assert made['availability_zone'] == 'east'
    # host1 runs servers: moving it to another zone is refused, as in Nova
    moved = tristate.run(*ADMIN, 'aggregate', 'add', 'host', 'rack-1',
                         'host1', ok=False)
    assert moved.returncode == 1 and 'HTTP 409' in moved.stderr, moved.stderr
    tristate.json(*ADMIN, 'aggregate', 'create', 'ssds')
    tristate.json(*ADMIN, 'aggregate', 'add', 'host', 'ssds', 'host1')
    tristate.run(*ADMIN, 'aggregate', 'set', '--property', 'ssd=true',
                 'ssds')
    shown = tristate.json(*ADMIN, 'aggregate', 'show', 'ssds')
    assert (shown['hosts'], shown['properties']) == ('host1', 'ssd=true')
    listed = tristate.json(*ADMIN, 'aggregate', 'list', '--long')
    assert [(a['Name'], a['Availability Zone'], a['Hosts']) for a in listed
            ] == [('rack-1', 'east', ''), ('ssds', None, 'host1')]
    tristate.run(*ADMIN, 'aggregate', 'unset', '--property', 'ssd', 'ssds')
    assert tristate.json(*ADMIN, 'aggregate', 'show', 'ssds')[
        'properties'] == ''
    zones = tristate.json(*ALICE, 'availability-zone', 'list')
    assert zones == [{'Zone Name': 'nova', 'Zone Status': 'available'}]
    detail = tristate.json(*ADMIN, 'availability-zone', 'list', '--long')
    assert sorted((r['Zone Name'], r['Host Name']) for r in detail
                  if r['Service Name'] == 'nova-compute') == [
        ('nova', 'host1'), ('nova', 'host2')]
    assert 'HTTP 403' in tristate.run(*ALICE, 'aggregate', 'list',
                                      ok=False).stderr
    tristate.json(*ADMIN, 'aggregate', 'remove', 'host', 'ssds', 'host1')
    for name in ('ssds', 'rack-1'):
        tristate.run(*ADMIN, 'aggregate', 'delete', name)
    assert tristate.json(*ADMIN, 'aggregate', 'list') == []
def test_keypair_commands_and_a_server_with_a_config_drive(tristate):
    key = tristate.state_dir / 'alice.pem'
    made = tristate.json(*ALICE, 'keypair', 'create', '--private-key',
                         str(key), 'alice-key')
    assert key.read_text().startswith('-----BEGIN RSA PRIVATE KEY')
    assert oct(key.stat().st_mode & 0o777) == '0o600'
    assert [k['Name'] for k in tristate.json(*ALICE, 'keypair', 'list')] == [
        'alice-key']
    assert tristate.json(*BOB, 'keypair', 'list') == []
    shown = tristate.json(*ALICE, 'keypair', 'show', 'alice-key')
    assert shown['fingerprint'] == made['fingerprint']
    script = tristate.state_dir / 'boot.sh'
    script.write_bytes(b'#!/bin/sh\necho booted\n')
    server = tristate.json(*ALICE, 'server', 'create', 'keyed', '--flavor',
                           'tiny', '--image', 'base', '--key-name',
                           'alice-key', '--user-data', str(script),
                           '--config-drive', '--wait')
    assert (server['key_name'], server['config_drive']) == ('alice-key',
                                                            'True')
    (drive,) = (tristate.state_dir / 'agent' / 'config-drives').glob(
        '*/%s.iso' % server['id'])
    files, _ = read(str(drive))
    assert files['openstack/latest/user_data'] == b'#!/bin/sh\necho booted\n'
    tristate.run(*ALICE, 'keypair', 'delete', 'alice-key')
    assert tristate.json(*ALICE, 'keypair', 'list') == []


def test_console_log_show(tristate, servers):
    server_id = servers['web-1']['id']
    out = tristate.run(*ALICE, 'console', 'log', 'show', server_id).stdout
    assert 'BOOT-OK %s\n' % server_id in out
    out = tristate.run(*ALICE, 'console', 'log', 'show', '--lines', '1',
                       server_id).stdout
    assert out == 'BOOT-OK %s\n' % server_id
    # another project's server is not found
    assert tristate.run(*BOB, 'console', 'log', 'show', server_id,
                        ok=False).returncode != 0


def test_console_url_show_without_serial_consoles_says_so(tristate, servers):
    done = tristate.run(*ALICE, 'console', 'url', 'show',
                        servers['web-1']['id'], ok=False)
    assert done.returncode != 0
    assert 'Unavailable console type serial' in done.stderr


def test_server_create_in_a_server_group(tristate):
    """``tristate server create --group``: the group hint; an
    anti-affinity group's second member goes to the other host."""
    resp = requests.post(
        tristate.endpoint + '/v2.1/os-server-groups',
        json={'server_group': {'name': 'apart',
                               'policies': ['anti-affinity']}},
        headers={'X-Auth-Token': 'carol:proj-c'}, timeout=30)
    assert resp.status_code == 200, resp.text
    group = resp.json()['server_group']['id']
    carol = ('--os-token', 'carol:proj-c')
    made = [tristate.json(*carol, 'server', 'create', 'apart-%d' % n,
                          '--flavor', 'tiny', '--image', 'base',
                          '--group', group)['id'] for n in range(2)]
    hosts = {tristate.json(*ADMIN, 'server', 'show', uuid)['host']
             for uuid in made}
    assert hosts == {'host1', 'host2'}
