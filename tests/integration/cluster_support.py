"""A three-node RabbitMQ cluster for a test, and a load to run across it.

:class:`Cluster` drives ``tools/test-services.sh cluster DIR ...`` (three
Debian rabbitmq-server nodes on 127.0.0.1, joined with ``rabbitmqctl
join_cluster``, in a directory the rabbitmq user can enter); the fixture
that uses it stops the nodes and removes the directory whatever happened.

:class:`Load` sends builds, actions and hard deletes through a plane's
conductor API from a thread of its own and records every request: what it
asked, the task it got (or the error the call raised) and how long the call
took; :func:`verify` then checks that each accepted request ended, and
:func:`summary` prints the figures.
"""

import json
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from common import states
from common.states import vm
from tests import daemon_support
from tests import support

SCRIPT = os.path.join(daemon_support.SOURCE_ROOT, 'tools', 'test-services.sh')
RABBIT_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'
PORT_ENV = 'TRISTATE_TEST_RABBIT_CLUSTER_PORT'
NODES = (0, 1, 2)
PORTS = 17      # the cluster uses N .. N+16 (see tools/test-services.sh)
# Seconds a node may take to boot: a node killed under load, started again
# on 2 busy cores, took over 60 s once (9 s on an idle cluster).
BOOT_ENV = 'TRISTATE_TEST_RABBIT_BOOT_TIMEOUT'
BOOT = 180


def _free_base():
    """A base port N with N .. N+16 all free on 127.0.0.1 now."""
    if os.environ.get(PORT_ENV):
        return int(os.environ[PORT_ENV])
    for _ in range(50):
        base = support.free_port()
        if base + PORTS < 65536 and all(
                not support.listening(base + n) for n in range(PORTS)):
            return base
    pytest.fail('no %d free consecutive ports on 127.0.0.1' % PORTS)


class Cluster:
    """The nodes tristate-c0..c2@localhost; ``url`` names all three."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix='tristate-cluster-')
        os.chmod(self.path, 0o755)     # the rabbitmq user enters it
        self.url = None
        self.down = set()

    def _run(self, *args, timeout=BOOT + 60, env=None):
        done = subprocess.run([SCRIPT, 'cluster', self.path, *args],
                              capture_output=True, text=True, check=False,
                              timeout=timeout, env=dict(env or os.environ, **{
                                  BOOT_ENV: str(BOOT)}))
        assert done.returncode == 0, 'cluster %s failed (%d): %s%s' % (
            ' '.join(args), done.returncode, done.stdout, done.stderr)
        return done.stdout

    def start(self):
        out = self._run('start', timeout=2 * BOOT + 60, env=dict(
            os.environ, **{PORT_ENV: str(_free_base())}))
        line = next(x for x in out.splitlines()
                    if 'TRISTATE_TEST_RABBIT_CLUSTER_URL=' in x)
        self.url = line.split('=', 1)[1]
        return self

    def keep_logs(self, where):
        """Copy the nodes' logs to ``where`` (the directory is removed)."""
        for node in NODES:
            logs = os.path.join(self.path, 'cluster', 'n%d' % node, 'log')
            if os.path.isdir(logs):
                shutil.copytree(logs, os.path.join(where, 'n%d' % node),
                                dirs_exist_ok=True)

    def stop(self):
        with_errors = subprocess.run([SCRIPT, 'cluster', self.path, 'stop'],
                                     capture_output=True, timeout=120,
                                     check=False)
        shutil.rmtree(self.path, ignore_errors=True)
        return with_errors.returncode

    def kill(self, node):
        """SIGKILL node ``node``: no goodbye to its clients or peers."""
        self._run('node', str(node), 'kill')
        self.down.add(node)

    def stop_node(self, node):
        """Stop node ``node`` cleanly (SIGTERM; waits until it is gone)."""
        self._run('node', str(node), 'stop')
        self.down.add(node)

    def start_node(self, node):
        """Start node ``node`` again; returns once it is up (it rejoins)."""
        self._run('node', str(node), 'start')
        self.down.discard(node)

    def up(self):
        return [n for n in NODES if n not in self.down]

    def queues(self):
        """Every queue: [{'name', 'type', 'leader'}], asked of a live node
        (``rabbitmqctl list_queues name type leader``)."""
        out = self._run('ctl', str(self.up()[0]), 'list_queues', 'name',
                        'type', 'leader', '--formatter', 'json')
        return json.loads(out)

    def leader(self, queue):
        """The node number leading quorum queue ``queue``."""
        for row in self.queues():
            if row['name'] == queue:
                assert row['type'] == 'quorum', row
                return int(row['leader'].split('@')[0][len('tristate-c'):])
        raise AssertionError('no queue %s' % queue)


def running_cluster(logs):
    """For a fixture: yields a started :class:`Cluster`, then removes it,
    its nodes' logs copied to ``logs``."""
    if not os.path.exists(RABBIT_SERVER):
        if os.environ.get('CI') == 'true':
            pytest.fail('CI needs rabbitmq-server for the cluster test')
        pytest.skip('rabbitmq-server is not installed')
    made = Cluster()
    try:
        yield made.start()
    finally:
        made.keep_logs(logs)
        made.stop()


class Request:
    """One request of the load, as the caller saw it."""

    def __init__(self, kind, uuid, target):
        self.kind = kind
        self.uuid = uuid
        self.target = target
        self.task_id = None
        self.error = None
        self.started = time.monotonic()
        self.took = None
        self.ran = None     # seconds from its task's start to its end

    def __repr__(self):
        return '%s %s -> %s (%s)' % (self.kind, self.uuid, self.target,
                                     self.error or self.task_id)


# An action on an idle instance, by its vm_state: (action, vm_state after).
NEXT = {vm.ACTIVE: (('stop', vm.STOPPED), ('reboot', vm.ACTIVE)),
        vm.STOPPED: (('start', vm.ACTIVE),)}


class Load:
    """Builds, actions on idle instances and hard deletes from ``workers``
    threads, each sending one request every ``pause`` seconds, until
    :meth:`stop`: of every four requests of a thread, one build, two
    actions and one delete. An instance is acted on by one thread at a
    time."""

    def __init__(self, plane, pool, *, workers=1, pause=0.2):
        self.plane = plane
        self.pool = list(pool)        # uuids the load may act on
        self.pause = pause
        self.requests = []
        self.deleted = []
        self.known = set()
        self._lock = threading.Lock()
        self._claimed = set()
        self._rng = random.Random(26)
        self._halt = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,),
                                          daemon=True, name='load-%d' % n)
                         for n in range(workers)]

    def start(self):
        # The tasks run before the load (the pool's builds) are not its.
        self.known = {e['task_id'] for uuid in self.pool
                      for e in self.plane.statedb.list_actions(uuid)}
        for thread in self._threads:
            thread.start()
        return self

    def stop(self):
        self._halt.set()
        for thread in self._threads:
            thread.join(120)
            assert not thread.is_alive(), 'the load did not stop'

    def _run(self, worker):
        n = 0
        while not self._halt.wait(self.pause):
            n += 1
            kind = n % 4    # as many deletes as builds: the hosts never fill
            if kind == 1:
                self._build('load-%d-%d' % (worker, n))
            elif kind == 3:
                self._with_idle(self._delete)
            else:
                self._with_idle(self._act)

    def _call(self, request, call):
        with self._lock:
            self.requests.append(request)
        try:
            return call()
        except Exception as err:   # noqa: BLE001 - recorded, then checked
            request.error = '%s: %s' % (type(err).__name__, err)
            return None
        finally:
            request.took = time.monotonic() - request.started

    # --- what a request calls: the conductor API here (HttpLoad: the REST
    # API); an error raised is the call's failure

    def create(self, name):
        """Build a server; its uuid."""
        return self.plane.api.create_instance(
            self.plane.ctx, name=name, flavor='tiny',
            image_ref='cirros')['uuid']

    def run_action(self, uuid, action):
        self.plane.api.run_action(self.plane.ctx, uuid, action)

    def hard_delete(self, uuid):
        """Delete a server; its row as the delete left it."""
        return self.plane.api.delete_instance(self.plane.ctx, uuid)

    # --- the requests --------------------------------------------------------

    def _build(self, name):
        request = Request('build', None, vm.ACTIVE)
        uuid = self._call(request, lambda: self.create(name))
        if uuid is not None:
            request.uuid = uuid
            request.task_id = self.plane.last_task(uuid, 'build')
            with self._lock:
                self.pool.append(uuid)

    def _with_idle(self, do):
        """``do(inst)`` on an idle ACTIVE or STOPPED instance of the pool
        that no other thread holds, if there is one."""
        with self._lock:
            pool = [u for u in self.pool if u not in self._claimed]
            self._rng.shuffle(pool)
        for uuid in pool:
            with self._lock:
                if uuid in self._claimed:
                    continue
                self._claimed.add(uuid)
            try:
                inst = self.plane.instance(uuid)
                if inst['task_id'] is None and inst['vm_state'] in NEXT:
                    do(inst)
                    return
            finally:
                with self._lock:
                    self._claimed.discard(uuid)

    def _act(self, inst):
        action, target = self._rng.choice(NEXT[inst['vm_state']])
        request = Request(action, inst['uuid'], target)
        done = self._call(request, lambda: self.run_action(
            inst['uuid'], action) or True)
        if done is not None:
            request.task_id = self.plane.last_task(inst['uuid'], action)

    def _delete(self, inst):
        with self._lock:
            self.pool.remove(inst['uuid'])
        request = Request('delete', inst['uuid'], vm.HARD_DELETED)
        gone = self._call(request, lambda: self.hard_delete(inst['uuid']))
        if gone is not None:
            request.task_id = self.plane.last_task(inst['uuid'], 'delete')
            with self._lock:
                self.deleted.append(gone)


def _entry(plane, request):
    return next(e for e in plane.statedb.list_actions(request.uuid)
                if e['task_id'] == request.task_id)


def verify(plane, load, deadline):
    """Each accepted request ended within ``deadline`` seconds: done (its
    target state) or failed with a reason; none applied twice; no
    instance left with a task; deleted domains destroyed. Returns the
    tasks that failed, as (request, message)."""
    failed = []
    for request in load.requests:
        if request.task_id is None:
            continue
        plane.wait_idle(request.uuid, deadline)
        entry = _entry(plane, request)
        assert entry['result'] != states.RESULT_RUNNING, (request, entry)
        assert entry['finished_at'] is not None, (request, entry)
        request.ran = (entry['finished_at']
                       - entry['started_at']).total_seconds()
        if entry['result'] != states.RESULT_SUCCESS:
            assert entry['message'], (request, entry)
            failed.append((request, entry['message']))
    for inst in plane.statedb.list_instances(include_deleted=True):
        plane.wait_idle(inst['uuid'], deadline)
        _applied_once(plane, load, inst)
    for inst in load.deleted:
        plane.wait_destroyed(inst, deadline)
    return failed


def _applied_once(plane, load, inst):
    """Every task in ``inst``'s action log is one the load asked for (or one
    whose call failed, so that the caller could not know), each once; its
    vm_state is the target of its last request that succeeded."""
    asked = [r for r in load.requests if r.uuid == inst['uuid']]
    tasks = [e['task_id'] for e in plane.statedb.list_actions(inst['uuid'])]
    assert len(tasks) == len(set(tasks)), (inst['uuid'], tasks)
    accepted = {r.task_id for r in asked if r.task_id} | load.known
    unknown = [t for t in tasks if t not in accepted]
    unanswered = [r for r in load.requests if r.error and r.kind != 'delete']
    assert len(unknown) <= len(unanswered), (inst['uuid'], unknown, asked)
    if not asked and unknown:
        return      # a build whose call failed: it ran, or failed, once
    allocs = plane.statedb.list_allocations(instance_uuid=inst['uuid'])
    live = inst['vm_state'] != vm.HARD_DELETED and inst['host']
    if inst['vm_state'] == vm.ERROR and not allocs:
        # A build whose agent died before its domain was seen: failed,
        # its allocation freed (check's invariants judge the domains).
        return
    assert len(allocs) == (1 if live else 0), (inst, allocs)


def summary(load, failed, events):
    """The figures of a run, as lines: requests, failures, longest stall."""
    kinds = {}
    for request in load.requests:
        kinds[request.kind] = kinds.get(request.kind, 0) + 1
    refused = [r for r in load.requests if r.error]
    calls = sorted(load.requests, key=lambda r: r.took or 0)
    lines = ['requests: %d (%s)' % (len(load.requests), ', '.join(
        '%s %d' % kv for kv in sorted(kinds.items())))]
    lines.append('calls that failed: %d' % len(refused))
    lines.extend('  %r' % r for r in refused)
    lines.append('tasks that failed: %d' % len(failed))
    lines.extend('  %r: %s' % item for item in failed)
    tasks = sorted((r for r in load.requests if r.ran is not None),
                   key=lambda r: r.ran)
    if calls:
        lines.append('longest stall: the slowest call took %.1f s (%r)'
                     % (calls[-1].took, calls[-1]))
    if tasks:
        lines.append('longest task: %.1f s from its start to its end (%r)'
                     % (tasks[-1].ran, tasks[-1]))
    lines.extend(events)
    return lines
