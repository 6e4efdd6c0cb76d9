"""Metrics, health and traceable logs, scraped from a running plane.

The event counters are process-wide (:data:`common.metrics.REGISTRY`), so
each test compares a scrape before and after what it does: with the
periodic jobs off, only its own tasks move them.
"""

import collections
import datetime
import io
import logging

from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log as oslo_log
from prometheus_client import parser
import pytest

from api import service as api_service
from api import wsgi
from common import context
from common import reconcile
from common.db import api as db_api
from common.db import engine
from common.states import vm
from tests.functional import api_support
from tests.functional.conftest import active
from tests.functional.conftest import faults
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_idle


def scrape(app):
    """{(name, sorted label items): value} of one GET /metrics, parsed with
    prometheus-client's own parser."""
    resp = app.test_client().get('/metrics')
    assert resp.status_code == 200
    assert resp.content_type.startswith('text/plain')
    samples = {}
    for family in parser.text_string_to_metric_families(
            resp.get_data(as_text=True)):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = (
                sample.value)
    return samples


def delta(before, after, name, **labels):
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_a_build_and_a_failed_stop_move_the_task_counters(plane, app, ctx):
    before = scrape(app)
    inst = active(plane, ctx)
    faults(plane, inst['host']).set_fault('power_off', 'fail', count=1)
    plane.client.run_action(ctx, inst['uuid'], 'stop', {})
    after_stop = wait_idle(plane, inst['uuid'])
    assert after_stop['vm_state'] == vm.ACTIVE        # rolled back
    after = scrape(app)

    moved = {
        (name, action): delta(before, after, name, action=action)
        for name in ('tristate_tasks_started_total',
                     'tristate_tasks_finished_total',
                     'tristate_tasks_failed_total',
                     'tristate_tasks_preempted_total',
                     'tristate_tasks_timed_out_total')
        for action in ('build', 'stop')}
    assert moved == {
        ('tristate_tasks_started_total', 'build'): 1,
        ('tristate_tasks_started_total', 'stop'): 1,
        ('tristate_tasks_finished_total', 'build'): 1,
        ('tristate_tasks_finished_total', 'stop'): 0,
        ('tristate_tasks_failed_total', 'build'): 0,
        ('tristate_tasks_failed_total', 'stop'): 1,
        ('tristate_tasks_preempted_total', 'build'): 0,
        ('tristate_tasks_preempted_total', 'stop'): 0,
        ('tristate_tasks_timed_out_total', 'build'): 0,
        ('tristate_tasks_timed_out_total', 'stop'): 0,
    }
    count = 'tristate_task_duration_seconds_count'
    assert delta(before, after, count, action='build', result='finished') == 1
    assert delta(before, after, count, action='stop', result='failed') == 1
    assert delta(before, after, count, action='stop', result='finished') == 0
    # the agent's own: the driver calls of both tasks were timed
    driver = 'tristate_driver_call_duration_seconds_count'
    assert delta(before, after, driver, host=inst['host'],
                 method='spawn') == 1
    assert delta(before, after, driver, host=inst['host'],
                 method='power_off') == 1


def test_a_hard_delete_during_a_task_counts_as_preempted(plane, app, ctx):
    inst = active(plane, ctx)
    faults(plane, inst['host']).set_fault('power_off', 'hang', count=1)
    plane.client.run_action(ctx, inst['uuid'], 'stop', {})
    before = scrape(app)
    plane.client.delete_instance(ctx, inst['uuid'])
    after = scrape(app)
    assert delta(before, after, 'tristate_tasks_preempted_total',
                 action='stop') == 1
    assert delta(before, after, 'tristate_task_duration_seconds_count',
                 action='stop', result='preempted') == 1


def expected_instances(plane):
    """tristate_instances computed the slow way: every row, in Python."""
    down_time = plane.conf.conductor.service_down_time
    alive_since = plane.statedb.clock() - datetime.timedelta(seconds=down_time)
    up = {h['name']: h['last_heartbeat'] >= alive_since
          for h in plane.statedb.list_hosts()}
    counts = collections.Counter()
    for inst in plane.statedb.list_instances(include_deleted=True):
        oper = reconcile.oper_state(inst, host_up=up.get(inst['host'], False))
        if inst['vm_state'] == vm.HARD_DELETED and oper != reconcile.ERROR_UP:
            continue
        counts[(inst['vm_state'], inst['task_state'] or '', oper)] += 1
    return counts


def test_the_state_gauges_match_the_database(plane, app, ctx):
    active(plane, ctx, name='running')
    stopped = active(plane, ctx, name='stopped')
    plane.client.run_action(ctx, stopped['uuid'], 'stop', {})
    wait_idle(plane, stopped['uuid'])
    gone = active(plane, ctx, name='gone')
    plane.stop_agent(gone['host'])          # so that its domain stays
    plane.client.delete_instance(ctx, gone['uuid'])
    samples = scrape(app)
    shown = {tuple(v for _k, v in labels): value
             for (name, labels), value in samples.items()
             if name == 'tristate_instances'}
    # labels sort as oper_state, task_state, vm_state
    shown = collections.Counter({(v, t, o): n for (o, t, v), n in
                                 shown.items()})
    assert shown == expected_instances(plane)
    assert shown[(vm.HARD_DELETED, '', reconcile.ERROR_UP)] == 1
    assert samples[('tristate_agents', (('state', 'up'),))] == 2
    assert samples[('tristate_agents', (('state', 'down'),))] == 0
    for host in plane.host_names:
        assert samples[('tristate_agent_up', (('host', host),))] == 1


def test_the_agents_count_their_reports_and_events(plane, app, ctx):
    before = scrape(app)
    host = active(plane, ctx)['host']

    def moved():
        after = scrape(app)
        return all(delta(before, after, name, host=host, **labels) >= 1
                   for name, labels in (
                       ('tristate_agent_reports_total',
                        {'kind': 'heartbeat', 'outcome': 'sent'}),
                       ('tristate_agent_reports_total',
                        {'kind': 'power', 'outcome': 'sent'}),
                       ('tristate_agent_events_total', {})))
    wait_for(moved, what='the agent counters of %s to move' % host)


def test_healthcheck_answers_200_then_503_without_the_database(
        plane, app, tmp_path):
    resp = app.test_client().get('/healthcheck')
    assert resp.status_code == 200, resp.get_data(as_text=True)

    gone = db_api.StateDB(engine.Database(
        'sqlite:///%s' % (tmp_path / 'no-such-dir' / 'tristate.sqlite'),
        max_retries=1))
    conf = api_support.configure(plane.conf)
    broken = wsgi.create_app(conf, api_service.make_client(
        conf, plane.bus, gone))
    resp = broken.test_client().get('/healthcheck')
    assert resp.status_code == 503, resp.get_data(as_text=True)


def test_metrics_can_be_turned_off_on_the_api(plane):
    plane.conf.set_override('enabled', False, group='metrics')
    app = api_support.make_app(plane)
    resp = app.test_client().get('/metrics', headers={
        'X-Auth-Token': api_support.ADMIN_TOKEN})
    assert resp.status_code == 404


# --- logs --------------------------------------------------------------------

@pytest.fixture
def formatted_log():
    """Every log line of the test, formatted by oslo.log's ContextFormatter
    with Tristate's defaults, as a daemon would write it."""
    context.set_log_defaults()
    log_conf = cfg.ConfigOpts()
    oslo_log.register_options(log_conf)
    log_conf([], project='tristate', default_config_files=[])
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatters.ContextFormatter(
        project='tristate', version='test', config=log_conf))
    root = logging.getLogger()
    old_level = root.level
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    yield stream
    root.removeHandler(handler)
    root.setLevel(old_level)
    log_conf.reset()


def test_one_grep_follows_a_task_from_the_api_to_the_agent(
        plane, app, formatted_log):
    api = api_support.Api(app, token=api_support.new_project())
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'], {'os-stop': None})
    request_id = resp.headers['X-OpenStack-Request-ID']
    stopped = api.settled(server['id'])
    task_id = plane.statedb.list_actions(server['id'])[-1]['task_id']
    assert stopped['status'] == 'SHUTOFF'

    lines = formatted_log.getvalue().splitlines()
    of_request = [line for line in lines if request_id in line]
    # the API's own line, and the agent's, found by the request id
    assert any('wsgi' in line and 'action' in line for line in of_request), (
        of_request)
    agent = [line for line in of_request if 'compute_agent.manager' in line
             and 'Running stop' in line]
    assert agent, of_request
    # the agent's line names the task and the instance, not in its message
    assert '[task: %s]' % task_id in agent[0]
    assert '[instance: %s]' % server['id'] in agent[0]
