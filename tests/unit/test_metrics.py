"""common.metrics: every metric defined once, the hooks, the state read at
scrape time, and the HTTP endpoint. Counters are process-wide, so each
test compares values before and after."""

import datetime
import urllib.request

from oslo_config import cfg
from prometheus_client import parser
import pytest
from sqlalchemy import exc as sa_exc

from common import conf as tconf
from common import exception
from common import metrics
from common import reconcile
from common import states
from common.db import engine
from common.db import state_metrics

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)


def value(name, **labels):
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


def family_samples(families, name):
    (family,) = [f for f in families if f.name == name]
    return {tuple(s.labels.values()): s.value for s in family.samples}


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate', default_config_files=[])
    yield conf
    conf.reset()


# --- definitions ---------------------------------------------------------------

def test_every_metric_is_named_tristate_and_explained():
    ours = [f for f in metrics.REGISTRY.collect()
            if not f.name.startswith(('process_', 'python_'))]
    assert len(ours) == 12
    for family in ours:
        assert family.name.startswith('tristate_'), family.name
        assert len(family.documentation) > 20, family.name


# --- hooks ---------------------------------------------------------------------

def _rows(action='stop', seconds=7.5, task_id='t-1'):
    before = {'task_id': task_id, 'task_action': action,
              'task_started_at': T0}
    after = {'task_id': None,
             'updated_at': T0 + datetime.timedelta(seconds=seconds)}
    return before, after


@pytest.mark.parametrize('result', ['finished', 'failed', 'preempted'])
def test_task_ended_counts_and_times_by_result(result):
    name = 'tristate_tasks_%s_total' % result
    count = value(name, action='unit_x')
    total = value('tristate_task_duration_seconds_sum', action='unit_x',
                  result=result)
    metrics.task_ended(*_rows('unit_x', 7.5), result)
    assert value(name, action='unit_x') == count + 1
    assert value('tristate_task_duration_seconds_sum', action='unit_x',
                 result=result) == total + 7.5
    assert value('tristate_task_duration_seconds_bucket', action='unit_x',
                 result=result, le='10.0') >= 1


def test_a_delete_of_an_idle_instance_is_no_preemption():
    count = value('tristate_tasks_preempted_total', action='unit_idle')
    metrics.task_ended(*_rows('unit_idle', task_id=None), 'preempted')
    assert value('tristate_tasks_preempted_total',
                 action='unit_idle') == count


def test_started_and_timed_out():
    started = value('tristate_tasks_started_total', action='unit_y')
    timed_out = value('tristate_tasks_timed_out_total', action='unit_y')
    metrics.task_started('unit_y')
    metrics.task_timed_out('unit_y')
    assert value('tristate_tasks_started_total', action='unit_y') == (
        started + 1)
    assert value('tristate_tasks_timed_out_total', action='unit_y') == (
        timed_out + 1)


def test_reconcile_counts_decisions_that_act_only():
    def count(decision):
        return value('tristate_reconcile_decisions_total', rule='crash',
                     decision=decision)
    before = {d: count(d) for d in ('restart', reconcile.NONE,
                                    reconcile.STORE)}
    for decision in ('restart', reconcile.NONE, reconcile.STORE):
        metrics.reconcile_decision('crash', decision)
    assert count('restart') == before['restart'] + 1
    assert count(reconcile.NONE) == before[reconcile.NONE]
    assert count(reconcile.STORE) == before[reconcile.STORE]


def test_rpc_errors_count_the_method_and_error_class():
    before = value('tristate_rpc_errors_total', method='unit_call',
                   error='TimeoutError')
    metrics.rpc_error('unit_call', TimeoutError())
    assert value('tristate_rpc_errors_total', method='unit_call',
                 error='TimeoutError') == before + 1


def test_the_database_counts_retries_and_giving_up(tmp_path):
    database = engine.Database('sqlite:///%s' % (tmp_path / 'db.sqlite'),
                               max_retries=3, retry_interval=0,
                               max_retry_interval=0)

    def locked(conn):
        raise sa_exc.OperationalError('SELECT 1', {},
                                      Exception('database is locked'))
    retried = value('tristate_db_errors_total', outcome='retried')
    unavailable = value('tristate_db_errors_total', outcome='unavailable')
    with pytest.raises(exception.DBUnavailable):
        database.transaction(locked)
    assert value('tristate_db_errors_total', outcome='retried') == (
        retried + 2)
    assert value('tristate_db_errors_total', outcome='unavailable') == (
        unavailable + 1)
    database.dispose()


class _Driver:
    name = 'unit'

    def spawn(self, uuid):
        return 'spawned %s' % uuid

    def power_off(self, uuid):
        raise RuntimeError('no')


def test_timed_driver_times_calls_and_passes_the_rest_through():
    timed = metrics.TimedDriver(_Driver(), 'unit-host')

    def calls(method):
        return value('tristate_driver_call_duration_seconds_count',
                     host='unit-host', method=method)
    spawns, offs = calls('spawn'), calls('power_off')
    assert timed.name == 'unit'
    assert timed.spawn('u1') == 'spawned u1'
    with pytest.raises(RuntimeError):
        timed.power_off('u1')
    assert (calls('spawn'), calls('power_off')) == (spawns + 1, offs + 1)


def test_timed_driver_calls_a_method_replaced_after_a_first_call():
    """The timed wrapper is kept per method (a build asks for it several
    times), but one the driver's attribute no longer is never answers."""
    driver = _Driver()
    timed = metrics.TimedDriver(driver, 'unit-host')
    assert timed.spawn('u1') == 'spawned u1'
    assert timed.spawn is timed.spawn
    driver.spawn = lambda uuid: 'replaced %s' % uuid
    assert timed.spawn('u2') == 'replaced u2'
    del driver.spawn
    assert timed.spawn('u3') == 'spawned u3'


# --- state at scrape time ------------------------------------------------------

def test_state_collector_counts_instances_and_agents(statedb, instances,
                                                     clock, conf):
    running = instances.active()
    statedb.store_power_report(running, host=instances.host,
                               state=states.power.RUNNING, seq=1)
    instances.in_state(states.vm.STOPPED)
    instances.in_state(states.vm.ERROR)
    deleted = instances.active()                 # its domain still runs
    statedb.store_power_report(deleted, host=instances.host,
                               state=states.power.RUNNING, seq=1)
    statedb.hard_delete(instances.ctx, deleted)
    instances.in_state(states.vm.HARD_DELETED)   # gone: not counted
    instances.create()                           # building
    statedb.host_heartbeat('silent', vcpus=1, memory_mb=1, disk_gb=1)
    clock.advance(conf.conductor.service_down_time + 1)
    statedb.host_heartbeat(instances.host, vcpus=100, memory_mb=10 ** 6,
                           disk_gb=10 ** 4)

    families = list(state_metrics.StateCollector(statedb, conf).collect())
    assert family_samples(families, 'tristate_instances') == {
        ('active', '', 'running'): 1,
        ('stopped', '', 'ADMIN_down'): 1,
        ('error', '', 'ERROR_down'): 1,
        ('hard_deleted', '', 'ERROR_up'): 1,
        ('initialized', 'building', 'ADMIN_down'): 1,
    }
    # silent's last heartbeat is older than service_down_time: down
    assert family_samples(families, 'tristate_agent_up') == {
        (instances.host,): 1, ('silent',): 0}
    assert family_samples(families, 'tristate_agents') == {
        ('up',): 1, ('down',): 1}


# --- serving -------------------------------------------------------------------

def test_enabled_defaults_per_service(conf):
    assert metrics.enabled(conf, default=True) is True
    assert metrics.enabled(conf, default=False) is False
    conf.set_override('enabled', True, group='metrics')
    assert metrics.enabled(conf, default=False) is True


def test_serve_is_off_unless_enabled(conf):
    assert metrics.serve(conf, default=False) is None


def test_serve_answers_a_scrape_that_parses(conf, statedb, instances):
    instances.active()
    conf.set_override('enabled', True, group='metrics')
    conf.set_override('host', '127.0.0.1', group='metrics')
    conf.set_override('port', 0, group='metrics')
    server = metrics.serve(conf, statedb=statedb, default=False)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                    timeout=10) as resp:
            text = resp.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    names = {f.name for f in parser.text_string_to_metric_families(text)}
    assert {'tristate_instances', 'tristate_agents', 'tristate_tasks_started',
            'tristate_task_duration_seconds', 'process_cpu_seconds'} <= names
