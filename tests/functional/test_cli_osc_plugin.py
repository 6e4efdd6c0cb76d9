"""``openstack tristate ...``: the openstackclient plugin
(:mod:`api.cli.osc_plugin`) through the real ``openstack`` command, on the
clouds of :mod:`tests.functional.test_cli_openstackclient_noauth` (no
Keystone; the member's and the admin's noauth tokens): the states only
Tristate has (vm_state, task id, oper_state, power state), the reconcile
policies, the action log with task ids and results, hosts, leases."""

import pytest

from tests.functional.test_cli_openstackclient_noauth import home  # noqa: F401
from tests.functional.test_cli_openstackclient_noauth import osc
from tests.functional.test_cli_openstackclient_noauth import parsed
from tests.functional.test_cli_openstackclient_noauth import url  # noqa: F401
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def server(home):  # noqa: F811
    return parsed(osc(home, 'server', 'create', '--image', IMAGE,
                      '--flavor', 'tiny', '--wait', '-f', 'json',
                      'plugin-vm', cloud='member'))


def test_server_show_has_tristates_states(home, server):  # noqa: F811
    shown = parsed(osc(home, 'tristate', 'server', 'show', server['id'],
                       '-f', 'json', cloud='member'))
    assert (shown['id'], shown['vm_state'], shown['task_id'],
            shown['power_state'], shown['oper_state']) == (
        server['id'], 'active', None, 'RUNNING', 'running')
    listed = parsed(osc(home, 'tristate', 'server', 'list', '--name',
                        '^plugin-', '-f', 'json', cloud='member'))
    assert [(s['ID'], s['Oper State']) for s in listed] == [
        (server['id'], 'running')]


def test_policies_and_the_action_log(home, server):  # noqa: F811
    changed = parsed(osc(home, 'tristate', 'server', 'set-policy',
                         server['id'], '--crash', 'stop', '-f', 'json',
                         cloud='member'))
    assert changed['crash'] == 'stop'
    log = parsed(osc(home, 'tristate', 'server', 'actions', server['id'],
                     '-f', 'json', cloud='member'))
    assert [(e['Action'], e['Result']) for e in log] == [('build',
                                                          'success')]
    assert len(log[0]['Task ID']) == 36


def test_hosts_and_leases(home, server):  # noqa: F811
    hosts = parsed(osc(home, 'tristate', 'host', 'list', '-f', 'json'))
    assert hosts and all(h['State'] in ('up', 'down') for h in hosts)
    denied = osc(home, 'tristate', 'host', 'list', cloud='member', ok=False)
    assert denied.returncode == 1 and 'HTTP 403' in denied.stderr
    assert isinstance(parsed(osc(home, 'tristate', 'lease', 'list', '-f',
                                 'json', cloud='member')), list)
