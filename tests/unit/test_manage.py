"""``tristate-manage``: schema sync and the action table, offline."""

import datetime
import os

from oslo_config import cfg
import pytest

from common import conf as tconf
from common.actions import TABLE
from common.cmd import manage
from common.db import api as db_api
from common.db import engine
from common.db import migration
from common.db import services
from tests import daemon_support
from tests import support


@pytest.fixture
def conf_file(tmp_path):
    path = tmp_path / 'tristate.conf'
    path.write_text('[DEFAULT]\nstate_dir = %s\n' % (tmp_path / 'state'))
    return path


def _run(conf_file, *argv):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    return manage.main(['--config-file', str(conf_file), *argv], conf=conf)


def test_db_sync_creates_the_schema_at_head(conf_file, tmp_path, capsys):
    assert _run(conf_file, 'db', 'sync') == 0
    database = engine.Database(engine.default_sqlite_url(
        str(tmp_path / 'state')))
    try:
        assert migration.current_revision(database) == migration.head_revision()
    finally:
        database.dispose()
    assert migration.head_revision() in capsys.readouterr().out


def test_db_version_after_sync(conf_file, capsys):
    _run(conf_file, 'db', 'sync')
    capsys.readouterr()
    _run(conf_file, 'db', 'version')
    out = capsys.readouterr().out
    head = migration.head_revision()
    assert 'current: %s' % head in out and 'head: %s' % head in out


def test_actions_prints_every_action(conf_file, capsys):
    assert _run(conf_file, 'actions') == 0
    out = capsys.readouterr().out
    printed = {line.split()[0] for line in out.splitlines()[2:] if line}
    assert printed == set(TABLE.actions)


def test_docs_writes_the_states_page(conf_file, tmp_path):
    out = tmp_path / 'states.md'
    _run(conf_file, 'docs', 'states', '--output', str(out))
    from common import docs
    assert out.read_text() == docs.render_states_md()


def _state_db(tmp_path):
    from common.db import api as db_api
    return db_api.StateDB(engine.Database(engine.default_sqlite_url(
        str(tmp_path / 'state'))))


def test_check_a_clean_plane_exits_0_with_a_summary(conf_file, tmp_path,
                                                    capsys):
    _run(conf_file, 'db', 'sync')
    capsys.readouterr()
    statedb = _state_db(tmp_path)
    statedb.host_heartbeat('node1', vcpus=4, memory_mb=4096, disk_gb=40)
    statedb.db.dispose()
    assert _run(conf_file, 'check') == 0
    out = capsys.readouterr().out
    assert out.startswith('All invariants hold') and '1 hosts' in out


def test_check_names_every_violation_and_exits_1(conf_file, tmp_path,
                                                 capsys):
    import sqlalchemy as sa
    from common.db import models
    _run(conf_file, 'db', 'sync')
    capsys.readouterr()
    statedb = _state_db(tmp_path)
    statedb.host_heartbeat('node1', vcpus=4, memory_mb=4096, disk_gb=40)
    hosts = models.Host.__table__
    statedb.db.transaction(lambda conn: conn.execute(sa.update(hosts).values(
        used_vcpus=20, used_disk_gb=1)))
    statedb.db.dispose()
    assert _run(conf_file, 'check') == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:-1] == [
        'host node1: used_vcpus is 20 but its allocations sum to 0',
        'host node1: used_vcpus 20 is over its capacity 4 x 4',
        'host node1: used_disk_gb is 1 but its allocations sum to 0']
    assert lines[-1].startswith('3 violation(s) found')


def _bad_domains(statedb, which):
    """One broken rule of issue 19, made by hand: an instance on node1
    whose domain is uncounted, outlives it, or is reported elsewhere."""
    import sqlalchemy as sa
    from common import context
    from common.db import models
    ctx = context.get_admin_context()
    inst = statedb.create_instance(ctx, {
        'name': 'vm', 'project_id': 'p', 'user_id': 'u',
        'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1,
        'image_ref': 'cirros'})
    uuid, task = inst['uuid'], ctx.for_task(inst['task_id'])
    statedb.allocate(task, uuid, 'node1', vcpus=1, memory_mb=512, disk_gb=1)
    statedb.finish_task(task, uuid)
    statedb.store_power_report(uuid, host='node1', state='RUNNING', seq=3)
    if which == 'uncounted':
        statedb.db.transaction(lambda conn: conn.execute(sa.delete(
            models.Allocation.__table__)))
        statedb.db.transaction(lambda conn: conn.execute(sa.update(
            models.Host.__table__).values(used_vcpus=0, used_memory_mb=0,
                                          used_disk_gb=0,
                                          free_memory_mb=4096)))
    elif which == 'deleted':
        statedb.hard_delete(ctx, uuid)
        statedb.db.transaction(lambda conn: conn.execute(sa.update(
            models.Instance.__table__).values(
                hard_deleted_at=datetime.datetime(2000, 1, 1))))
    else:
        statedb.db.transaction(lambda conn: conn.execute(sa.insert(
            models.StrayDomain.__table__).values(
                host='node2', instance_uuid=uuid, power_state=1, power_seq=4,
                reported_at=statedb.clock(), doomed=False,
                created_at=statedb.clock())))
    return uuid


@pytest.mark.parametrize('which,words', [
    ('uncounted', 'reported RUNNING on host node1, but it holds no '
                  'allocation there'),
    ('deleted', 'is hard-deleted but host node1 reported its domain RUNNING'),
    ('elsewhere', 'is placed on host node1 but host node2 reported its '
                  'domain RUNNING'),
])
def test_check_names_a_domain_that_breaks_issue_19s_rules(
        conf_file, tmp_path, capsys, which, words):
    _run(conf_file, 'db', 'sync')
    capsys.readouterr()
    statedb = _state_db(tmp_path)
    statedb.host_heartbeat('node1', vcpus=4, memory_mb=4096, disk_gb=40)
    uuid = _bad_domains(statedb, which)
    statedb.db.dispose()
    assert _run(conf_file, 'check') == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines[:-1] if uuid in line and words in line], (
        lines)
    assert len(lines) == 2, lines
    assert lines[-1].startswith('1 violation(s) found')


# --- status --------------------------------------------------------------------

def _services(tmp_path, conf_file, *beats):
    """Sync the schema and record ``beats``: (binary, host, seconds ago)."""
    _run(conf_file, 'db', 'sync')
    database = engine.Database(engine.default_sqlite_url(
        str(tmp_path / 'state')))
    try:
        for binary, host, ago in beats:
            when = db_api.utcnow() - datetime.timedelta(seconds=ago)
            statedb = db_api.StateDB(database, clock=lambda w=when: w)
            statedb.service_heartbeat(binary=binary, host=host,
                                      version='9.9.%d' % ago)
    finally:
        database.dispose()


def _status(conf_file, capsys):
    capsys.readouterr()
    code = _run(conf_file, 'status')
    return code, capsys.readouterr().out


def test_status_all_up(tmp_path, conf_file, capsys):
    _services(tmp_path, conf_file, (services.CONDUCTOR, 'c1', 0),
              (services.AGENT, 'h1', 1))
    code, out = _status(conf_file, capsys)
    assert code == 0
    lines = {line.split()[1]: line for line in out.splitlines()[1:] if line}
    assert '9.9.0' in lines['c1'] and lines['c1'].endswith('up')
    assert '9.9.1' in lines['h1'] and lines['h1'].endswith('up')


def test_status_fails_when_an_agent_is_down(tmp_path, conf_file, capsys):
    _services(tmp_path, conf_file, (services.CONDUCTOR, 'c1', 0),
              (services.AGENT, 'h1', 0), (services.AGENT, 'h2', 3600))
    code, out = _status(conf_file, capsys)
    assert code == 1
    assert 'DOWN' in [line.split()[-1] for line in out.splitlines()
                      if ' h2 ' in line][0]
    assert 'an agent is down' in out


def test_status_fails_when_every_conductor_is_down(tmp_path, conf_file,
                                                   capsys):
    _services(tmp_path, conf_file, (services.CONDUCTOR, 'c1', 3600),
              (services.CONDUCTOR, 'c2', 7200), (services.AGENT, 'h1', 0))
    code, out = _status(conf_file, capsys)
    assert code == 1 and 'no conductor is up' in out
    _services(tmp_path, conf_file, (services.CONDUCTOR, 'c2', 0))
    assert _status(conf_file, capsys)[0] == 0


def test_status_says_whether_the_bus_takes_a_message(tmp_path, conf_file,
                                                     capsys):
    """Issue 20, item 13: a conductor cut off from the bus keeps its
    heartbeat (it is ready and retries the broker); status tells that case
    from a healthy plane by trying the bus itself, once."""
    _services(tmp_path, conf_file, (services.CONDUCTOR, 'c1', 0))
    text = conf_file.read_text()
    conf_file.write_text(text + 'transport_url = %s\n'
                         % daemon_support.closed_url(support.free_port()))
    code, out = _status(conf_file, capsys)
    assert code == 1
    assert 'message bus: UNREACHABLE' in out and 'guest:' not in out
    assert 'the message bus is unreachable' in out
    url = os.environ.get('TRISTATE_TEST_RABBIT_URL')
    if url:
        conf_file.write_text(text + 'transport_url = %s\n' % url)
        code, out = _status(conf_file, capsys)
        assert code == 0 and 'message bus: reachable' in out, out


def test_network_create_list_delete(conf_file, capsys):
    """Bootstrap: a network before any API is up (issue 23)."""
    _run(conf_file, 'db', 'sync')
    assert _run(conf_file, 'network', 'create', 'guests', '--cidr',
                '192.0.2.0/24', '--bridge', 'br0', '--dns', '192.0.2.53',
                '--mtu', '1450') == 0
    out = capsys.readouterr().out
    assert 'Network guests created' in out and 'gateway 192.0.2.1' in out
    assert _run(conf_file, 'network', 'create', 'bad', '--cidr',
                '192.0.2.0/33', '--bridge', 'br1') == 1
    assert 'cidr' in capsys.readouterr().out
    _run(conf_file, 'network', 'list')
    out = capsys.readouterr().out
    assert 'guests  192.0.2.0/24  gateway 192.0.2.1  on br0  shared' in out
    assert 'bad' not in out
    assert _run(conf_file, 'network', 'delete', 'guests') == 0
    assert 'Network guests' in capsys.readouterr().out
    _run(conf_file, 'network', 'list')
    assert 'guests' not in capsys.readouterr().out
