"""Every Prometheus metric of Tristate, defined once, and how it is served.

Two kinds:

* **Events**, counted where they happen by one small call (the task gateway,
  the reaper, reconcile, the database's retry loop, the RPC client, the
  agent): module-level counters and histograms on :data:`REGISTRY`, one per
  process. In ``tristate-all`` the conductor, the agents and the API share
  it, so one scrape sees them all.
* **State**, read from the database at scrape time by
  :class:`common.db.state_metrics.StateCollector` (one GROUP BY over
  instances, one read of the hosts), never kept in memory: several
  conductors and APIs all report the same truth, and a restart loses
  nothing.

Served by the API at ``/metrics`` on its own port (:func:`wsgi_app`), by a
conductor or an agent on ``[metrics] host:port`` (:func:`serve`). Names
start with ``tristate_``; docs/operator-guide.md lists them all.
"""

import datetime
import functools
import logging
import sys
import time

import prometheus_client as prom

from common import reconcile

LOG = logging.getLogger(__name__)

REGISTRY = prom.CollectorRegistry(auto_describe=True)
prom.ProcessCollector(registry=REGISTRY)
prom.PlatformCollector(registry=REGISTRY)

# Tasks last from well under a second (fake driver) to an hour (a build's
# default timeout).
TASK_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
                1800, 3600)
DRIVER_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
                  30, 60, 300)

# --- tasks (conductor: conductor/gateway.py, conductor/results.py) -----------

TASKS_STARTED = prom.Counter(
    'tristate_tasks_started', 'Tasks claimed, per action (a build counts '
    'when its instance is created).', ['action'], registry=REGISTRY)
TASKS_FINISHED = prom.Counter(
    'tristate_tasks_finished', 'Tasks that ended in success, per action.',
    ['action'], registry=REGISTRY)
TASKS_FAILED = prom.Counter(
    'tristate_tasks_failed', 'Tasks that ended in failure, per action '
    '(timed out, lost by a restarted agent and buried builds included).',
    ['action'], registry=REGISTRY)
TASKS_PREEMPTED = prom.Counter(
    'tristate_tasks_preempted', 'Tasks ended by a hard delete or a '
    'reset-state while they ran, per action.', ['action'],
    registry=REGISTRY)
TASKS_TIMED_OUT = prom.Counter(
    'tristate_tasks_timed_out', 'Tasks the reaper failed for lack of '
    'progress, per action (also counted in tristate_tasks_failed).',
    ['action'], registry=REGISTRY)
TASK_DURATION = prom.Histogram(
    'tristate_task_duration_seconds', 'From claim to end of a task (database '
    'clock), per action and result (finished, failed, preempted).',
    ['action', 'result'], buckets=TASK_BUCKETS, registry=REGISTRY)

# --- reconcile (conductor/reconcile.py) ----------------------------------------

RECONCILE_DECISIONS = prom.Counter(
    'tristate_reconcile_decisions', 'Reconcile decisions that act, per rule '
    '(the table\'s decision, see docs/reconcile.md) and the decision taken '
    'after the instance\'s policies (none and store are not counted).',
    ['rule', 'decision'], registry=REGISTRY)

# --- errors (common/db/engine.py, conductor/rpcapi.py) -------------------------

DB_ERRORS = prom.Counter(
    'tristate_db_errors', 'Transient database errors: outcome "retried" for '
    'each retry, "unavailable" when the retries ran out.', ['outcome'],
    registry=REGISTRY)
RPC_ERRORS = prom.Counter(
    'tristate_rpc_errors', 'Calls to a conductor that failed on the bus '
    '(timeout, broker), per method and error class.', ['method', 'error'],
    registry=REGISTRY)

# --- compute agents (compute_agent/) -----------------------------------------

AGENT_EVENTS = prom.Counter(
    'tristate_agent_events', 'Domain changes the agent\'s driver reported, '
    'per host.', ['host'], registry=REGISTRY)
AGENT_REPORTS = prom.Counter(
    'tristate_agent_reports', 'Reports an agent sent to a conductor, per '
    'host, kind (heartbeat, power) and outcome (sent, failed).',
    ['host', 'kind', 'outcome'], registry=REGISTRY)
DRIVER_CALL_DURATION = prom.Histogram(
    'tristate_driver_call_duration_seconds', 'Virt driver calls made by '
    'tasks, per host and method (failed calls included).',
    ['host', 'method'], buckets=DRIVER_BUCKETS, registry=REGISTRY)


# --- hooks ---------------------------------------------------------------------

def task_started(action):
    TASKS_STARTED.labels(action).inc()


def task_ended(before, after, result):
    """A task ended (``result``: finished, failed or preempted); ``before``
    and ``after`` are the instance's rows around the UPDATE that ended it.
    Nothing is counted when no task ran (a delete of an idle instance)."""
    action = before.get('task_action')
    if not before.get('task_id') or not action:
        return
    counter = {'finished': TASKS_FINISHED, 'failed': TASKS_FAILED,
               'preempted': TASKS_PREEMPTED}[result]
    counter.labels(action).inc()
    seconds = _seconds(before.get('task_started_at'), after.get('updated_at'))
    if seconds is not None:
        TASK_DURATION.labels(action, result).observe(seconds)


def _seconds(start, end):
    if not isinstance(start, datetime.datetime) or not isinstance(
            end, datetime.datetime):
        return None
    return max(0.0, (end - start).total_seconds())


def task_timed_out(action):
    TASKS_TIMED_OUT.labels(action).inc()


def reconcile_decision(rule, decision):
    if decision not in (reconcile.NONE, reconcile.STORE):
        RECONCILE_DECISIONS.labels(rule, decision).inc()


def db_error(outcome):
    DB_ERRORS.labels(outcome).inc()


def rpc_error(method, err):
    RPC_ERRORS.labels(method, type(err).__name__).inc()


def agent_report(host, kind, ok):
    AGENT_REPORTS.labels(host, kind, 'sent' if ok else 'failed').inc()


class TimedDriver:
    """A virt driver whose public calls are timed into
    ``tristate_driver_call_duration_seconds``; everything else passes
    through unchanged."""

    def __init__(self, driver, host):
        self._driver = driver
        self._host = host
        # name -> (the driver's callable, its timed wrapper): a task asks
        # for a method several times; the wrapper is made again only when
        # the driver's attribute changed
        self._timed = {}

    def __getattr__(self, name):
        value = getattr(self._driver, name)
        if name.startswith('_') or not callable(value):
            return value
        found = self._timed.get(name)
        if found is not None and found[0] == value:
            return found[1]
        histogram = DRIVER_CALL_DURATION.labels(self._host, name)

        @functools.wraps(value)     # its signature shows through
        def timed(*args, **kwargs):
            started = time.monotonic()
            try:
                return value(*args, **kwargs)
            finally:
                histogram.observe(time.monotonic() - started)
        self._timed[name] = (value, timed)
        return timed


# --- serving -------------------------------------------------------------------

def enabled(conf, *, default):
    """``[metrics] enabled``, or ``default`` when unset (True for the API and
    the conductors, False for the agents)."""
    value = conf.metrics.enabled
    return default if value is None else value


def registry(statedb=None, conf=None):
    """What a scrape of this process shows: the event metrics, plus the
    state read from ``statedb`` when given (the API, the conductor)."""
    view = prom.CollectorRegistry(auto_describe=False)
    view.register(_Events())
    if statedb is not None:
        # Only processes with a database get here: the agent never imports
        # SQLAlchemy (and stays small).
        from common.db import state_metrics
        view.register(state_metrics.StateCollector(statedb, conf))
    return view


class _Events:
    """:data:`REGISTRY` as one collector of another registry."""

    def collect(self):
        return REGISTRY.collect()


def wsgi_app(statedb=None, conf=None):
    """A WSGI application answering every request with a scrape."""
    return prom.make_wsgi_app(registry(statedb, conf))


def serve(conf, *, statedb=None, default):
    """Start the metrics HTTP server in a thread if enabled (``default``
    when ``[metrics] enabled`` is unset); returns it (``shutdown()`` stops
    it) or None."""
    if not enabled(conf, default=default):
        return None
    try:
        server, _thread = prom.start_http_server(
            conf.metrics.port, addr=conf.metrics.host,
            registry=registry(statedb, conf))
    except OSError as err:
        # Before the daemon starts anything (its callers serve first): a
        # second daemon on one machine with the same port stops here.
        why = ('cannot serve metrics on %s:%d ([metrics] host, port): %s; '
               'nothing was started. Give each conductor or agent on one '
               'machine its own [metrics] port (0: a free one) or set '
               '[metrics] enabled = false' % (
                   conf.metrics.host, conf.metrics.port,
                   err.strerror or err))
        LOG.error('%s', why)        # the log file says it too
        sys.exit('%s: %s' % (conf.prog or 'tristate', why))
    LOG.info('Serving metrics on http://%s:%d/metrics', conf.metrics.host,
             server.server_address[1])
    return server
