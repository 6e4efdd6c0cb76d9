"""Soak: no guest outlives its instance, every running domain is paid for,
no task can wedge (issue 19, "Done when").

``tristate-all --hosts 3`` runs as its own process, as a user runs it.
Instances are built through the REST API, then random actions are sent at
them from several threads at once: deletes, live migrations, reset-states
(to active and to error), stops, starts, reboots, and builds of new
instances; the plane is killed with SIGKILL and started again twice while
they run. Once every task has ended (the reaper's timeouts are short
here), the hypervisor's truth is compared with the database's:

* every domain on every fake host belongs to a live instance placed on
  that host;
* every host's usage is the sum of the allocations of the instances placed
  on it, and every instance with a domain holds its allocation there;
* no task is left running, none older than its timeout;
* ``tristate-manage check`` finds nothing.

The counts it checked are printed. Small here (well under a minute of
actions); the issue's size (100 instances, 500 actions) with
``TRISTATE_FAULTS_FULL=1`` (``tox -e faults``).
"""

import collections
import concurrent.futures
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
import requests

from common.db import api as db_api
from common.db import checks
from common.db import engine
from common.states import power
from common.states import vm
from compute_agent.virt import fake
from tests import support
from tests.functional.conftest import wait_for

FULL = os.environ.get('TRISTATE_FAULTS_FULL') == '1'
INSTANCES = 100 if FULL else 20
ACTIONS = 500 if FULL else 120
KILLS = 2
THREADS = 8
HOSTS = 3
TASK_TIMEOUT = 15           # seconds, every action: the reaper ends the rest
STARTUP_TIMEOUT = 60.0
SETTLE_TIMEOUT = TASK_TIMEOUT * 4 + 30
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
FLAVOR = {'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}    # tiny
RATIOS = (4.0, 1.0, 1.0)        # [scheduler]'s defaults: cpu, ram, disk

CONFIG = """[DEFAULT]
state_dir = {state_dir}

[conductor]
periodic_interval = 1
task_timeouts = {timeouts}

[compute]
heartbeat_interval = 0.5
power_sync_interval = 1

[fake_driver]
poll_interval = 0.05
latency = migrate_out:0.2,spawn:0.05,power_off:0.05
"""

# Server actions the workers choose from (body of POST .../action), with
# weights: the ones that move or end a guest are the point.
_MIGRATE = {'os-migrateLive': {'host': None, 'block_migration': 'auto'}}
_ACTIONS = (
    ('delete', 4, None),
    ('migrate', 6, _MIGRATE),
    ('reset_active', 3, {'os-resetState': {'state': 'active'}}),
    ('reset_error', 1, {'os-resetState': {'state': 'error'}}),
    ('stop', 2, {'os-stop': None}),
    ('start', 2, {'os-start': None}),
    ('reboot', 1, {'reboot': {'type': 'HARD'}}),
    ('build', 2, None),
    # a live migration, then a delete or a reset-state while it runs
    # (about when the fake moves the domain: its migrate_out latency)
    ('race', 4, None),
)


class Plane:
    """``tristate-all`` as a process: started, killed, started again."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.port = support.free_port()
        self.endpoint = 'http://127.0.0.1:%d/v2.1' % self.port
        self.conf_path = state_dir / 'tristate.conf'
        timeouts = ','.join('%s:%d' % (action, TASK_TIMEOUT) for action in (
            'build', 'rebuild', 'stop', 'start', 'reboot_hard',
            'live_migrate', 'power_on', 'power_off'))
        self.conf_path.write_text(CONFIG.format(state_dir=state_dir,
                                                timeouts=timeouts))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(('TRISTATE_', 'OS_'))}
        self.env['PYTHONPATH'] = REPO
        self.proc = None
        self.runs = 0
        self.up = threading.Event()     # serving; cleared while killed

    def start(self):
        self.runs += 1
        log = open(self.state_dir / ('tristate-all-%d.log' % self.runs), 'w')
        with log:
            self.proc = subprocess.Popen(
                [sys.executable, '-c', 'import sys; from conductor.cmd.all '
                 'import main; sys.exit(main())', '--config-file',
                 str(self.conf_path), '--hosts', str(HOSTS), '--state-dir',
                 str(self.state_dir), '--api-port', str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=self.env)
        wait_for(self._ready, timeout=STARTUP_TIMEOUT,
                 what='tristate-all to serve with %d hosts up' % HOSTS)
        self.up.set()

    def _ready(self):
        if self.proc.poll() is not None:
            pytest.fail('tristate-all exited with %s' % self.proc.returncode)
        return support.hypervisors_up(
            self.endpoint, unanswered=requests.RequestException) == HOSTS

    def kill(self):
        self.up.clear()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        support.stop(self.proc)


class Driver:
    """The clients: builds and random actions, counted by outcome."""

    def __init__(self, plane, seed, image):
        self.plane = plane
        self.image = image
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.uuids = []
        self.outcomes = collections.Counter()
        self.local = threading.local()

    def _session(self):
        if not hasattr(self.local, 'session'):
            self.local.session = requests.Session()
        return self.local.session

    def _count(self, what, resp):
        code = 'cut by the kill' if resp is None else resp.status_code
        with self.lock:
            self.outcomes['%s %s' % (what, code)] += 1
        return resp

    def request(self, what, method, path, body=None):
        """Send it; a request the kill cut short is counted as such and
        sent again once the plane serves again (every action lands)."""
        for _attempt in range(2):
            self.plane.up.wait(STARTUP_TIMEOUT)
            try:
                return self._count(what, self._session().request(
                    method, self.plane.endpoint + path, json=body,
                    timeout=30))
            except requests.RequestException:
                self._count(what, None)
                self.local.session = requests.Session()
        return None

    def build(self, name):
        resp = self.request('build', 'POST', '/servers', {'server': {
            'name': name, 'flavorRef': 'tiny', 'imageRef': self.image}})
        if resp is not None and resp.status_code == 202:
            with self.lock:
                self.uuids.append(resp.json()['server']['id'])

    def act(self, number):
        with self.lock:
            names = [a[0] for a in _ACTIONS]
            weights = [a[1] for a in _ACTIONS]
            what = self.random.choices(names, weights)[0]
            uuid = self.random.choice(self.uuids) if self.uuids else None
        if what == 'build' or uuid is None:
            return self.build('soak-%d' % number)
        if what == 'delete':
            return self.delete(uuid)
        if what == 'race':
            return self.race(uuid)
        body = next(a[2] for a in _ACTIONS if a[0] == what)
        return self.request(what, 'POST', '/servers/%s/action' % uuid, body)

    def delete(self, uuid, what='delete'):
        resp = self.request(what, 'DELETE', '/servers/%s' % uuid)
        if resp is not None and resp.status_code == 204:
            with self.lock:
                if uuid in self.uuids:
                    self.uuids.remove(uuid)
        return resp

    def race(self, uuid):
        with self.lock:
            delay = self.random.uniform(0.1, 0.35)
            delete = self.random.random() < 0.5
        resp = self.request('race migrate', 'POST',
                            '/servers/%s/action' % uuid, _MIGRATE)
        if resp is None or resp.status_code != 202:
            return resp
        time.sleep(delay)
        if delete:
            return self.delete(uuid, 'race delete')
        return self.request('race reset', 'POST', '/servers/%s/action' % uuid,
                            {'os-resetState': {'state': 'active'}})


def _image(plane):
    """The id of an image the builds boot, uploaded as a user does
    (``tristate image create``): the plane starts with none."""
    disk = plane.state_dir / 'cirros.raw'
    with open(disk, 'wb') as out:
        out.truncate(1024 * 1024)
    done = subprocess.run(
        [sys.executable, '-m', 'api.cli', '--os-endpoint',
         plane.endpoint.rsplit('/v2.1', 1)[0], 'image', 'create', 'cirros',
         '--file', str(disk), '-f', 'value', '-c', 'id'],
        capture_output=True, text=True, env=plane.env, timeout=60,
        check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def _statedb(state_dir):
    return db_api.StateDB(engine.Database(engine.default_sqlite_url(
        str(state_dir))))


def _strays(statedb):
    """Domains recorded as reported where their instance is not placed
    (a full report of their host that no longer lists them clears them)."""
    return [s for s in statedb.list_strays() if s['power_state']]


def _domains(state_dir):
    """{host: {uuid: record}} of the fake hypervisor, as it is now."""
    return {host: fake.HostStore(str(state_dir), host).read()['domains']
            for host in fake.list_hosts(str(state_dir))}


def _misplaced(state_dir, statedb):
    """Domains that no live instance placed on their host owns."""
    live = {i['uuid']: i for i in statedb.list_instances()}
    wrong = []
    for host, domains in _domains(state_dir).items():
        for uuid in domains:
            inst = live.get(uuid)
            if inst is None or inst['host'] != host:
                wrong.append((host, uuid, inst and (inst['vm_state'],
                                                    inst['host'])))
    return wrong


def _uncounted(state_dir, statedb):
    """Domains whose instance holds no allocation on their host, and hosts
    whose usage is not the allocations of the instances placed on them."""
    allocs = statedb.list_allocations()
    held = {(a['instance_uuid'], a['host']) for a in allocs}
    placed = {i['uuid']: i['host'] for i in statedb.list_instances()}
    wrong = [(host, uuid) for host, domains in _domains(state_dir).items()
             for uuid in domains if (uuid, host) not in held]
    for host in statedb.list_hosts():
        mine = [a for a in allocs if a['host'] == host['name']
                and placed.get(a['instance_uuid']) == host['name']]
        usage = (host['used_vcpus'], host['used_memory_mb'],
                 host['used_disk_gb'])
        summed = tuple(sum(a[k] for a in mine) for k in FLAVOR)
        if usage != summed:
            wrong.append((host['name'], usage, summed))
    return wrong


def _run_actions(plane, driver):
    """ACTIONS random actions from THREADS threads; the plane killed and
    started again KILLS times while they run."""
    kill_at = {ACTIONS * (k + 1) // (KILLS + 1) for k in range(KILLS)}
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        pending = []
        for number in range(ACTIONS):
            if number in kill_at:     # with requests and tasks in flight
                plane.kill()
                plane.start()
            pending.append(pool.submit(driver.act, number))
        for future in pending:
            future.result()


def test_no_guest_outlives_its_instance_and_every_domain_is_counted(
        tmp_path):
    plane = Plane(tmp_path)
    plane.start()
    statedb = _statedb(tmp_path)
    try:
        driver = Driver(plane, seed=19, image=_image(plane))
        with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(driver.build, ['vm-%d' % n
                                         for n in range(INSTANCES)]))
        _run_actions(plane, driver)

        wait_for(lambda: statedb.list_running_tasks() == [],
                 timeout=SETTLE_TIMEOUT,
                 what='every task to end', show=lambda: [
                     (i['uuid'], i['task_state'], i['task_updated_at'])
                     for i in statedb.list_running_tasks()])
        # two full reports of every host after the last task: what was to
        # be destroyed is gone, what runs is counted
        wait_for(lambda: not _misplaced(tmp_path, statedb)
                 and not _uncounted(tmp_path, statedb)
                 and not _strays(statedb),
                 timeout=30, what='every domain placed and counted',
                 show=lambda: (_misplaced(tmp_path, statedb),
                               _uncounted(tmp_path, statedb),
                               _strays(statedb)))
        limits = checks.Limits(task_timeouts={
            a: str(TASK_TIMEOUT) for a in ('build', 'live_migrate')},
            ratios=RATIOS, grace=1)
        found, seen = checks.find_violations(statedb.db, limits)
        assert [str(v) for v in found] == []
        manage = subprocess.run(
            [sys.executable, '-c', 'import sys; from common.cmd.manage import '
             'main; sys.exit(main())', '--config-file', str(plane.conf_path),
             'check'], capture_output=True, text=True, env=plane.env,
            timeout=60, check=False)
        assert manage.returncode == 0, manage.stdout + manage.stderr

        domains = _domains(tmp_path)
        instances = statedb.list_instances(include_deleted=True)
        counts = {
            'plane runs': plane.runs,
            'instances': len(instances),
            'live instances': len([i for i in instances
                                   if i['vm_state'] != vm.HARD_DELETED]),
            'hard-deleted': len([i for i in instances
                                 if i['vm_state'] == vm.HARD_DELETED]),
            'running domains': sum(1 for d in domains.values()
                                   for r in d.values()
                                   if r['power_state'] == power.RUNNING),
            'domains': sum(len(d) for d in domains.values()),
            'allocations': len(statedb.list_allocations()),
            'hosts': len(domains),
            'check': seen,
        }
        print('soak: %d actions; outcomes %s; checked %s' % (
            ACTIONS, dict(sorted(driver.outcomes.items())), counts))
        assert plane.runs == KILLS + 1
        # the soak did work: its first builds were accepted, and actions
        # reached servers (not refused before anything ran)
        assert driver.outcomes['build 202'] >= INSTANCES, driver.outcomes
        assert sum(n for key, n in driver.outcomes.items()
                   if key.split()[-1] in ('202', '204') and not key.startswith(
                       'build')) >= ACTIONS // 4, driver.outcomes
        assert counts['instances'] >= INSTANCES
        answered = sum(n for key, n in driver.outcomes.items()
                       if not key.endswith('kill'))
        assert answered >= INSTANCES + ACTIONS - KILLS * THREADS
    finally:
        plane.stop()
        statedb.db.dispose()
