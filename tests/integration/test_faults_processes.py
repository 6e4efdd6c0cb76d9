"""Fault injection: many processes of one deployment, each kind killed
under load.

Issue 26. Three ``tristate-conductor`` processes, two ``tristate-api``
processes behind one port (Debian's HAProxy on loopback, the operator
guide's "Scaling out" configuration: health checks on ``/healthcheck``,
connection failures sent to the other API) and ten ``tristate-compute-
agent`` processes (fake hypervisor), each agent with a RabbitMQ user of its
own (made here with ``rabbitmqctl import_definitions``, the guide's "One
user per agent" permissions, deleted afterwards), on PostgreSQL.

Client threads send builds, stops, starts, reboots and hard deletes
through HAProxy all along, while, in turn: a conductor is frozen with
messages in hand (SIGSTOP: what it received it holds) and SIGKILLed, then
started again; an API process is SIGKILLed, taken out by HAProxy, and
started again (back once HAProxy puts it back); an agent running a task
is SIGKILLed and started again. Each kill comes ``SETTLE`` s after the
one before, whether or not the process killed before is back yet. Every
accepted request ends, in its target state or failed with a reason,
within its deadline (a task whose conductor died between its claim and
its send is ended by the reaper: ``[conductor] task_timeouts`` is short
here); nothing is applied twice; no instance is left in a task; the
invariants of ``tristate-manage check`` hold; the figures (requests,
failures, the longest stall, how long each process took to be back) are
printed. Small in CI (two conductors, two APIs, three agents, a second of
load between the kills), at the issue's size with
``TRISTATE_FAULTS_FULL=1`` (``tox -e faults``).
"""

import threading
import time

import amqp
import pytest

from common.states import vm
from tests import images_support
from tests import support

from .cluster_support import summary
from .cluster_support import verify
from .conftest import Plane
from .conftest import size
from .processes_support import AgentUsers
from .processes_support import Haproxy
from .processes_support import HttpLoad

pytestmark = [pytest.mark.rabbitmq, pytest.mark.postgresql]

CONDUCTORS = size(2, 3)
APIS = ('api1', 'api2')
AGENTS = size(3, 10)
PRE_BUILT = size(3, 20)     # instances built before the load starts
WORKERS = size(2, 4)        # threads sending requests through HAProxy
SETTLE = size(1, 15)        # seconds of load between two faults
DOWN = size(0.5, 5)           # seconds a killed process stays dead
HELD = size(0, 10)          # at most this long frozen before the kill
END_DEADLINE = size(90, 300)
# The APIs' [api] rpc_timeout: a call to the frozen conductor fails after it.
RPC_TIMEOUT = size(15, 30)
RESTART = 180               # seconds a restarted process may take to be back
# Seconds HAProxy may take to mark a killed API DOWN: its checks (every
# 1 s, 3 failures) take 2 to 3.
TAKEN_OUT = 30
# The reaper ends a task no agent ever got (its conductor died after the
# claim) after this long without progress, not the table's 10-30 min.
TIMEOUTS = {action: 30 for action in ('build', 'stop', 'start', 'reboot')}


@pytest.fixture
def plane(request, tmp_path, broker, pg_admin):
    from tests.conftest import pg_database
    with pg_database(pg_admin) as database:
        made = Plane(tmp_path / 'plane', broker.url, conductors=CONDUCTORS,
                     db_url=database.url.render_as_string(hide_password=False),
                     hosts=['h%d' % n for n in range(1, AGENTS + 1)],
                     task_timeouts=TIMEOUTS,
                     fake_driver={'vcpus': 64, 'latency': {
                         'spawn': 1, 'power_off': 1, 'reboot': 1}})
        made.path.mkdir()
        request.node.tristate_planes = [made]
        users = AgentUsers(broker, made)
        made.urls.update(users.urls)
        try:
            yield made, users
        finally:
            made.stop()
            users.remove()


def _start(plane, users, events):
    """The agents' users first (rabbitmqctl boots an Erlang VM: 2 s alone,
    over 20 s while four Python processes start); then the conductors and
    the APIs at once, the agents, and HAProxy once the APIs listen.
    Returns the proxy."""
    began = time.monotonic()
    users.create()
    events.append('the agents\' RabbitMQ users made in %.1f s'
                  % (time.monotonic() - began))
    ports = {name: support.free_port() for name in APIS}
    proxy = Haproxy(plane.path, support.free_port(), ports)
    plane.logs['haproxy'] = [proxy.path / 'haproxy.log']   # in a failure

    def with_conductors():
        for name in APIS:
            plane.start_api(ports[name], name=name, rpc_timeout=RPC_TIMEOUT,
                            wait=False)
    plane.start(with_conductors=with_conductors)
    for name in APIS:
        plane.wait_for(lambda n=name: support.listening(ports[n]), 60,
                       '%s to listen' % name)
    images_support.upload_image('http://127.0.0.1:%d' % ports[APIS[0]])
    return proxy.start()


def _own_users(plane, users):
    """Each agent is connected as its own user, and cannot read another
    host's queue."""
    for host in plane.hosts:
        told = plane.wait_for(lambda h=host: [
            line for line in (plane.path / ('%s.log' % h)).read_text(
                errors='replace').splitlines() if 'Message bus: ' in line],
            30, 'the bus line of %s' % host)
        assert 'rabbit://%s@' % users.name(host) in told[0], told
    url = users.broker
    conn = amqp.Connection(host='%s:%d' % (url.hostname, url.port),
                           userid=users.name(plane.hosts[0]),
                           password=users.passwords[plane.hosts[0]],
                           connect_timeout=10)
    conn.connect()
    try:
        other = 'tristate-compute-%s.%s' % (plane.tag, plane.hosts[1])
        with pytest.raises(amqp.exceptions.AccessRefused) as refused:
            conn.channel().basic_get(other)
        assert "access to queue '%s'" % other in str(refused.value)
    finally:
        conn.collect()


def _held(plane, since):
    """True once an agent logged a result its conductor did not answer
    after offset ``since`` of its log."""
    for host in plane.hosts:
        try:
            text = (plane.path / ('%s.log' % host)).read_text(
                errors='replace')
        except FileNotFoundError:
            continue
        tail = text[since.get(host, 0):]
        if 'not delivered' in tail and 'Result of task' in tail:
            return True
    return False


def _log_size(plane, name):
    try:
        return (plane.path / ('%s.log' % name)).stat().st_size
    except FileNotFoundError:
        return 0


def _log_sizes(plane):
    return {host: _log_size(plane, host) for host in plane.hosts}


class _Restarts:
    """The processes started again, each watched by a thread of its own
    until it is back (so that the next fault need not wait for it)."""

    def __init__(self, plane, events):
        self.plane = plane
        self.events = events
        self.threads = []
        self.failed = []

    def restart(self, name, ready, *, down=None):
        """Start ``name`` again ``down`` (DOWN) s after its kill; it is
        back once ``ready(since)`` (``since``: its log's size then)."""
        time.sleep(DOWN if down is None else down)
        since = _log_size(self.plane, name)
        started = time.monotonic()
        self.plane.restart(name)

        def watch():
            try:
                self.plane.wait_for(lambda: ready(since), RESTART,
                                    '%s to be back' % name)
            except BaseException as err:    # noqa: BLE001 - raised in wait
                self.failed.append(err)
                return
            self.events.append('%s started again, back %.1f s later' % (
                name, time.monotonic() - started))
        thread = threading.Thread(target=watch, daemon=True,
                                  name='back-%s' % name)
        thread.start()
        self.threads.append(thread)

    def wait(self):
        """Until every process started again is back (or a failure)."""
        for thread in self.threads:
            thread.join(RESTART + 30)
        if self.failed:
            raise self.failed[0]
        assert not any(t.is_alive() for t in self.threads), 'still waiting'


def _consumes(plane, name):
    """ready() of a daemon: it logged that it consumes, after ``since``."""
    def ready(since):
        text = (plane.path / ('%s.log' % name)).read_text(errors='replace')
        return 'is consuming from the message bus' in text[since:]
    return ready


def _kill_conductor(plane, proxy, restarts):
    """Freeze a conductor until it holds an agent's result (or HELD s),
    SIGKILL it, start it again DOWN s later."""
    name = plane.conductors[1]
    since = _log_sizes(plane)
    started = time.monotonic()
    plane.freeze(name)
    deadline = started + HELD
    while not _held(plane, since) and time.monotonic() < deadline:
        time.sleep(0.1)
    held = _held(plane, since)
    plane.kill(name)
    restarts.events.append('froze %s, SIGKILLed it %.1f s later (%s)' % (
        name, time.monotonic() - started,
        'holding an agent\'s result' if held else 'no result held seen'))
    restarts.restart(name, _consumes(plane, name))


def _kill_api(plane, proxy, restarts):
    """SIGKILL an API; once HAProxy has taken it out (DOWN), start it
    again; back once HAProxy puts it back (UP).

    The DOWN is waited for: an API started again before HAProxy's checks
    failed ``fall`` times in a row is never seen down, so HAProxy has no
    UP to log either (the CI form once waited 180 s for that UP while the
    restarted API served requests through the proxy)."""
    name = APIS[0]
    downs, ups = proxy.seen(name, 'DOWN'), proxy.seen(name, 'UP')
    killed = time.monotonic()
    plane.kill(name)
    plane.wait_for(lambda: proxy.seen(name, 'DOWN') > downs, TAKEN_OUT,
                   'HAProxy to take the killed %s out (a "%s is DOWN" line '
                   'in haproxy.log)' % (name, name))
    restarts.events.append('SIGKILLed %s, HAProxy took it out %.1f s later'
                           % (name, time.monotonic() - killed))
    restarts.restart(name, lambda since: proxy.seen(name, 'UP') > ups,
                     down=0)


def _busy_host(plane):
    """A host with a task running on it now (the first, if none)."""
    for _ in range(50):
        for inst in plane.statedb.list_running_tasks():
            if inst['host']:
                return inst['host']
        time.sleep(0.1)
    return plane.hosts[0]


def _kill_agent(plane, proxy, restarts):
    host = _busy_host(plane)
    running = len(plane.statedb.list_running_tasks(host=host))
    plane.kill(host)
    restarts.events.append('SIGKILLed agent %s (%d tasks running on it)'
                           % (host, running))
    restarts.restart(host, _consumes(plane, host))


def test_many_processes_each_kind_killed_under_load(plane):
    plane, users = plane
    began = time.monotonic()
    events = []
    proxy = _start(plane, users, events)
    events.append('%d processes up in %.1f s' % (len(plane.procs) + 1,
                                                time.monotonic() - began))
    _own_users(plane, users)
    pool = [plane.api.create_instance(plane.ctx, name='pre-%d' % n,
                                      flavor='tiny', image_ref='cirros')['uuid']
            for n in range(PRE_BUILT)]
    for uuid in pool:
        plane.wait_idle(uuid, 60)
    load = HttpLoad(plane, pool, proxy.url, workers=WORKERS).start()
    began = time.monotonic()
    restarts = _Restarts(plane, events)
    try:
        for fault in (_kill_conductor, _kill_api, _kill_agent):
            time.sleep(SETTLE)
            fault(plane, proxy, restarts)
        restarts.wait()
        time.sleep(SETTLE)
    finally:
        load.stop()
        proxy.stop()
    events.append('load ran %.0f s' % (time.monotonic() - began))
    events.extend('haproxy: ' + line for line in proxy.state_changes())

    began = time.monotonic()
    failed = verify(plane, load, END_DEADLINE)
    events.append('every request ended %.1f s after the load'
                  % (time.monotonic() - began))
    print('\n'.join(summary(load, failed, events)))
    assert plane.violations() == []
    refused = [r for r in load.requests if r.error]
    assert len(refused) <= len(load.requests) // 4, refused
    assert sum(1 for r in load.requests if r.kind == 'build'
               and r.task_id) >= 2, load.requests

    # Every process still works: each host stops one of its instances
    # (the agents), builds land (the conductors, through both APIs).
    live = [plane.instance(u) for u in load.pool]
    hosts = sorted({i['host'] for i in live if i['vm_state'] == vm.ACTIVE})
    plane.still_works(live, hosts[:3])
    plane.check_alive()
