"""``tristate lease create|list|show|update|delete`` and ``server create
--reservation``, in-process against the API of a plane served over HTTP
(a real socket, port 0), as a user of one project."""

import json
import logging

import pytest

from api import server as server_mod
from api.cli import main as cli_main
from tests.functional import api_support
from tests.functional.conftest import reservable


@pytest.fixture
def endpoint(plane):
    reservable(plane)
    api_server = server_mod.ApiServer(api_support.make_app(plane), port=0,
                                      threads=4).start()
    yield api_server.url
    api_server.stop()


@pytest.fixture
def tristate(endpoint, capsys):
    token = api_support.new_project()

    def run(*argv):
        # cliff sets the root logger to DEBUG with a handler on this test's
        # captured stderr: put the process's logging back as it was.
        root = logging.getLogger()
        level, handlers = root.level, list(root.handlers)
        try:
            code = cli_main.main(['--os-endpoint', endpoint, '--os-token',
                                  token, *argv])
        finally:
            root.setLevel(level)
            root.handlers[:] = handlers
        out, err = capsys.readouterr()
        return code, out, err

    def json_of(*argv):
        code, out, err = run(*argv, '-f', 'json')
        assert code == 0, err
        return json.loads(out)
    run.json = json_of
    return run


def test_the_lease_commands(tristate, plane):
    lease = tristate.json('lease', 'create', 'night', '--start', 'now',
                          '--end', '2099-01-01 00:00', '--hosts', '1',
                          '--on-end', 'stop')
    assert (lease['name'], lease['status'], lease['on_end']) == (
        'night', 'PENDING', 'stop')
    assert 'physical:host 1-1 host(s) pending' in lease['reservations']
    plane.conductor.leases.periodic.run_once()

    (row,) = tristate.json('lease', 'list')
    assert (row['ID'], row['Status']) == (lease['id'], 'ACTIVE')
    shown = tristate.json('lease', 'show', 'night')
    assert 'start_lease' in shown['events'] and 'DONE' in shown['events']

    server = tristate.json('server', 'create', 'job', '--flavor', 'tiny',
                           '--image', 'cirros', '--reservation',
                           row['Reservation'], '--wait')
    # on the reserved host (which only admins see: empty for the project)
    assert server['host'] is None
    assert plane.statedb.get_instance(server['id'])['host'] == row['Hosts']

    updated = tristate.json('lease', 'update', 'night', '--name', 'late',
                            '--reduce-by', '1d')
    assert updated['name'] == 'late'
    assert updated['end_date'].startswith('2098-12-31T00:00:00')

    code, _out, err = tristate('lease', 'update', 'late', '--start', 'now')
    assert code == 1
    assert 'start_date cannot change once the lease has started' in err
    assert '(HTTP 409)' in err

    code, _out, err = tristate('lease', 'delete', 'late')
    assert code == 0, err
    assert tristate.json('lease', 'list') == []
    code, _out, err = tristate('lease', 'show', 'late')
    assert code == 1 and "No lease with a name or ID of 'late'" in err


def test_a_bad_date_says_which_field(tristate):
    code, _out, err = tristate('lease', 'create', 'x', '--end', 'soon')
    assert code == 1
    assert 'Invalid input for field/attribute end_date' in err
    assert '(HTTP 400)' in err


def test_the_lease_host_commands(endpoint, capsys):
    """An admin manages the reservable pool; a project may not."""
    def run(token, *argv):
        root = logging.getLogger()
        level, handlers = root.level, list(root.handlers)
        try:
            code = cli_main.main(['--os-endpoint', endpoint, '--os-token',
                                  token, 'lease', 'host', *argv])
        finally:
            root.setLevel(level)
            root.handlers[:] = handlers
        out, err = capsys.readouterr()
        return code, out, err

    admin = api_support.ADMIN_TOKEN
    assert run(admin, 'remove', 'host1', 'host2')[0] == 0
    code, out, _err = run(admin, 'list', '-f', 'json')
    assert (code, json.loads(out)) == (0, [])
    assert run(admin, 'add', 'host2')[0] == 0
    code, out, _err = run(admin, 'list', '-f', 'json')
    assert [h['Host'] for h in json.loads(out)] == ['host2']
    code, _out, err = run(api_support.new_project(), 'add', 'host1')
    assert code == 1 and '(HTTP 403)' in err
