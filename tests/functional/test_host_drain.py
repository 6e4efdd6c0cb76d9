"""``tristate host disable|enable|drain`` (issue 25), in-process against
the API of a plane served over HTTP, as the admin; the operator guide's
"Maintenance" section in the order it gives: drain (the host disabled,
every server that can move live-migrated, the others named with why),
deal with what is left, drain again until empty, patch, enable."""

import json
import logging

import pytest

from api import server as server_mod
from api.cli import main as cli_main
from common.db import images as images_db
from common.states import vm
from tests.functional import api_support
from tests.functional import osc_support
from tests.functional.conftest import active
from tests.functional.conftest import wait_idle
from tests.functional.conftest import set_opts


@pytest.fixture
def api_url(plane):
    api_server = server_mod.ApiServer(api_support.make_app(plane), port=0,
                                      threads=4).start()
    # the agents' image service (a cold migration's disk goes through it)
    set_opts(plane.conf, 'image', service_url=api_server.url + '/image')
    yield api_server.url
    api_server.stop()


@pytest.fixture
def tristate(api_url, capsys):

    def run(*argv):
        # cliff sets the root logger to DEBUG with a handler on this test's
        # captured stderr: put the process's logging back as it was.
        root = logging.getLogger()
        level, handlers = root.level, list(root.handlers)
        try:
            code = cli_main.main(['--os-endpoint', api_url,
                                  '--os-token', api_support.ADMIN_TOKEN,
                                  *argv])
        finally:
            root.setLevel(level)
            root.handlers[:] = handlers
        out, err = capsys.readouterr()
        return code, out, err
    return run


def _host(plane, name):
    [row] = [h for h in plane.statedb.list_hosts() if h['name'] == name]
    return row


def _on_host(plane, host):
    return sorted(i['uuid'] for i in plane.statedb.list_instances(host=host))


def test_disable_and_enable(tristate, plane):
    code, out, err = tristate('host', 'disable', 'host1', '--reason',
                              'new BIOS')
    assert code == 0, err
    assert 'host1: disabled (new BIOS)' in out
    assert (_host(plane, 'host1')['enabled'],
            _host(plane, 'host1')['disabled_reason']) == (False, 'new BIOS')
    code, out, err = tristate('host', 'enable', 'host1')
    assert code == 0, err
    assert _host(plane, 'host1')['enabled'] is True
    code, out, err = tristate('host', 'disable', 'nowhere')
    assert code == 1 and 'nowhere' in err


def test_drain_moves_what_it_can_and_says_why_not_the_rest(
        tristate, plane, ctx):
    admin = ctx.elevated()
    running = [active(plane, admin, force_host='host1')['uuid']
               for _ in range(2)]
    stopped = active(plane, admin, force_host='host1', name='off')['uuid']
    plane.client.run_action(admin, stopped, 'stop', {})
    assert wait_idle(plane, stopped)['vm_state'] == vm.STOPPED

    code, out, err = tristate('host', 'drain', 'host1', '-f', 'json')

    # not empty: the stopped server cannot move live
    assert code == 1
    rows = {r['ID']: r for r in json.loads(out)}
    assert {u: rows[u]['Result'] for u in rows} == dict(
        {u: 'moved' for u in running}, **{stopped: 'not moved'})
    assert {rows[u]['Where or Why'] for u in running} == {'host2'}
    assert 'status SHUTOFF' in rows[stopped]['Where or Why']
    assert '[1/3]' in err and '[3/3]' in err and 'not empty' in err
    assert _host(plane, 'host1')['enabled'] is False
    assert _host(plane, 'host1')['disabled_reason'] == (
        'drained by tristate host drain')
    assert _on_host(plane, 'host1') == [stopped]

    # the operator deals with it (here: starts it), drains again: empty
    plane.client.run_action(admin, stopped, 'start', {})
    assert wait_idle(plane, stopped)['vm_state'] == vm.ACTIVE
    code, out, err = tristate('host', 'drain', 'host1', '-f', 'json')
    assert code == 0, err
    assert [r['Result'] for r in json.loads(out)] == ['moved']
    assert _on_host(plane, 'host1') == []
    assert sorted(_on_host(plane, 'host2')) == sorted(running + [stopped])


def test_drain_cold_moves_a_stopped_server_and_confirms(tristate, plane, ctx):
    """``--cold``: what cannot move live is cold-migrated and the move
    confirmed; a stopped server stays stopped on its new host."""
    admin = ctx.elevated()
    running = active(plane, admin, force_host='host1')['uuid']
    stopped = active(plane, admin, force_host='host1', name='off')['uuid']
    plane.client.run_action(admin, stopped, 'stop', {})
    assert wait_idle(plane, stopped)['vm_state'] == vm.STOPPED

    code, out, err = tristate('host', 'drain', 'host1', '--cold', '-f',
                              'json')

    assert code == 0, err
    rows = {r['ID']: r for r in json.loads(out)}
    assert {u: (r['Result'], r['Where or Why']) for u, r in rows.items()} == {
        running: ('moved', 'host2'), stopped: ('moved', 'host2')}
    assert _on_host(plane, 'host1') == []
    moved = wait_idle(plane, stopped)
    assert (moved['host'], moved['vm_state']) == ('host2', vm.STOPPED)
    assert plane.statedb.list_allocations(instance_uuid=stopped) and all(
        a['host'] == 'host2'
        for a in plane.statedb.list_allocations(instance_uuid=stopped))


def test_drain_offloads_a_shelved_server(tristate, plane, ctx):
    """A shelved server (stopped, still held by its host) leaves the host
    as an offload: its snapshot kept, no allocation, the host empty."""
    set_opts(plane.conf, 'compute', shelved_offload_time=-1)
    admin = ctx.elevated()
    running = active(plane, admin, force_host='host1')['uuid']
    shelved = active(plane, admin, force_host='host1', name='kept')['uuid']
    plane.client.run_action(admin, shelved, 'shelve', {})
    assert wait_idle(plane, shelved)['vm_state'] == vm.SHELVED
    assert _on_host(plane, 'host1') == sorted([running, shelved])

    code, out, err = tristate('host', 'drain', 'host1', '-f', 'json')

    assert code == 0, err
    rows = {r['ID']: (r['Result'], r['Where or Why'])
            for r in json.loads(out)}
    assert rows == {running: ('moved', 'host2'),
                    shelved: ('offloaded', 'its unshelve picks a host')}
    assert _on_host(plane, 'host1') == []
    offloaded = wait_idle(plane, shelved)
    assert (offloaded['vm_state'], offloaded['host']) == (
        vm.SHELVED_OFFLOADED, None)
    assert offloaded['shelved_image_id']
    assert plane.statedb.list_allocations(instance_uuid=shelved) == []


def test_drain_says_why_a_shelved_server_was_not_offloaded(
        tristate, plane, ctx):
    """A shelved server whose snapshot is gone cannot be offloaded (its
    disk would be lost): the row says so, and ``--cold`` does not bury
    that reason under a cold migration's refusal."""
    set_opts(plane.conf, 'compute', shelved_offload_time=-1)
    admin = ctx.elevated()
    shelved = active(plane, admin, force_host='host1', name='kept')['uuid']
    plane.client.run_action(admin, shelved, 'shelve', {})
    assert wait_idle(plane, shelved)['vm_state'] == vm.SHELVED
    image_id = plane.statedb.get_instance(shelved)['shelved_image_id']
    images_db.delete(plane.statedb, admin, image_id)

    code, out, err = tristate('host', 'drain', 'host1', '--cold', '-f',
                              'json')

    assert code == 1
    [row] = json.loads(out)
    assert row['Result'] == 'not moved'
    assert row['Where or Why'].startswith('status SHELVED, not offloaded')
    assert 'snapshot' in row['Where or Why']
    assert 'cold' not in row['Where or Why']
    assert _on_host(plane, 'host1') == [shelved]


def test_openstack_tristate_host_commands(api_url, plane, ctx, tmp_path):
    """The same commands in the openstackclient plugin: ``openstack
    tristate host drain`` then ``enable``, through the real ``openstack``
    command (two commands: each costs seconds; disable is drain's first
    step, its own form is the same class as ``tristate host disable``)."""
    home = osc_support.write_clouds(tmp_path, osc_support.CLOUD, api_url,
                                    {'admin': api_support.ADMIN_TOKEN})
    admin = ctx.elevated()
    running = active(plane, admin, force_host='host1')['uuid']

    def openstack(*args):
        return osc_support.run(home, ['tristate', 'host', *args], 'admin')

    done = openstack('drain', 'host1', '-f', 'json')

    assert done.returncode == 0, done.stderr
    assert [(r['ID'], r['Result'], r['Where or Why'])
            for r in osc_support.parsed(done.stdout)] == [
        (running, 'moved', 'host2')]
    assert '[1/1]' in done.stderr
    assert _host(plane, 'host1')['enabled'] is False
    assert _on_host(plane, 'host1') == []
    done = openstack('enable', 'host1')
    assert done.returncode == 0, done.stderr
    assert _host(plane, 'host1')['enabled'] is True
