"""A host nobody enrolled took builds at its agent's first heartbeat.

Any process that could speak on the bus as an agent and send a heartbeat
under a new host name registered a host the scheduler used at once: there
was no way for an operator to require an admin's word first. Found by an
adversarial session on the embedded plane (issue 19, item 6). Fixed as
Nova's ``enable_new_services``: ``[scheduler] enable_new_hosts`` (default
true, the old behaviour); false registers a new host disabled, with a
reason saying why, until an admin enables it with ``tristate-manage host
enable NAME``. (Who may speak as which agent is the bus's business: one
RabbitMQ user per agent, docs/operator-guide.md.)
"""

from oslo_config import cfg

from common import conf as tconf
from common.cmd import manage
from common.db import hosts as db_hosts
from common.states import vm
from tests.functional.conftest import build
from tests.functional.conftest import set_opts


def _manage(plane, tmp_path, *argv):
    path = tmp_path / 'manage.conf'
    path.write_text('[DEFAULT]\nstate_dir = %s\n' % plane.conf.state_dir)
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    return manage.main(['--config-file', str(path), *argv], conf=conf)


def test_a_new_host_waits_for_an_admin_when_the_operator_says_so(
        conf, make_plane, ctx, tmp_path, capsys):
    set_opts(conf, 'scheduler', enable_new_hosts=False)
    plane = make_plane(hosts=1)

    host = plane.statedb.get_host('host1')
    assert (host['enabled'], host['disabled_reason']) == (
        False, db_hosts.NEW_HOST_DISABLED)
    refused = build(plane, ctx, name='early')
    assert (refused['vm_state'], refused['host']) == (vm.ERROR, None)

    assert _manage(plane, tmp_path, 'host', 'list') == 0
    assert 'host1  NO' in capsys.readouterr().out
    assert _manage(plane, tmp_path, 'host', 'enable', 'host1') == 0

    placed = build(plane, ctx, name='enrolled')
    assert (placed['vm_state'], placed['host']) == (vm.ACTIVE, 'host1')
    # and its later heartbeats keep it enabled
    assert plane.statedb.get_host('host1')['enabled'] is True


def test_by_default_a_new_host_is_enabled_at_once(make_plane, ctx):
    plane = make_plane(hosts=1)
    assert plane.statedb.get_host('host1')['enabled'] is True
    assert build(plane, ctx)['vm_state'] == vm.ACTIVE


def test_an_admin_can_disable_a_host_again(make_plane, ctx, tmp_path,
                                           capsys):
    plane = make_plane(hosts=1)
    assert _manage(plane, tmp_path, 'host', 'disable', 'host1',
                   '--reason', 'maintenance') == 0
    assert plane.statedb.get_host('host1')['disabled_reason'] == 'maintenance'
    assert build(plane, ctx)['vm_state'] == vm.ERROR
    assert _manage(plane, tmp_path, 'host', 'enable', 'nosuch') == 1
    assert 'No host nosuch' in capsys.readouterr().out
