"""A simulated fleet: instances seeded in the database in bulk, their
domains in the fake hypervisor's stores, and one real agent
:class:`~compute_agent.reporter.Reporter` per host (fake driver), many per
process, all speaking the real RPC API to the conductor over one bus.

Only the set-up takes shortcuts (bulk INSERTs, each host's store written in
one update); what is measured, the full power report, is the agent's own code
path: ``Reporter.full_report()`` reads every domain of its host, numbers
the reports and sends them to the conductor in a heartbeat (conductor RPC
1.4; ``power_report`` when capped below).
"""

import os
import threading
import time
import uuid as uuidlib

import sqlalchemy as sa

from common import context
from common import states
from common.db import api as db_api
from common.db import hosts as hosts_db
from common.states import vm
from compute_agent import journal as journal_mod
from compute_agent import reporter as reporter_mod
from compute_agent.virt import fake

CHUNK = 5000


def host_names(count, prefix='sim'):
    return ['%s%05d' % (prefix, n) for n in range(count)]


def seed(statedb, state_dir, hosts, per_host):
    """``per_host`` ACTIVE, RUNNING instances on each of ``hosts``, in the
    database and as domains of the hosts' fake stores."""
    ctx = context.RequestContext(user_id='bench', project_id='bench')
    template = statedb.create_instance(ctx, {
        'name': 'template', 'project_id': 'bench', 'user_id': 'bench',
        'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1,
        'image_ref': 'cirros'})
    statedb.hard_delete(ctx, template['uuid'])
    template = dict(template, vm_state=vm.ACTIVE, task_id=None,
                    task_state=None, task_action=None, task_started_at=None,
                    task_updated_at=None, power_state=states.power.RUNNING,
                    power_seq=0)
    rows = []
    flavor = {'name': 'tiny', 'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}
    for host in hosts:
        uuids = [str(uuidlib.uuid4()) for _ in range(per_host)]
        with fake.HostStore(state_dir, host).update(*uuids) as data:
            for n, uuid in enumerate(uuids):
                rows.append(dict(template, uuid=uuid, name='%s-%d' % (host, n),
                                 host=host))
                rec = fake._new_record(uuid, 'vm', flavor, 'cirros')
                rec['power_state'] = states.power.RUNNING
                data['domains'][uuid] = rec
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start:start + CHUNK]
        statedb.db.transaction(
            lambda conn, chunk=chunk: conn.execute(db_api.I.insert(), chunk))
    return len(rows)


def place(statedb, hosts, *, vcpus, memory_mb, disk_gb):
    """Make ``hosts`` known (as a first heartbeat of that capacity would)
    and give each seeded instance its allocation on its host, the hosts'
    sums to match: what ``tristate-manage check`` expects of instances
    placed by the scheduler. Two statements for all the allocations."""
    for host in hosts:
        statedb.host_heartbeat(host, vcpus=vcpus, memory_mb=memory_mb,
                               disk_gb=disk_gb)
    inst, alloc, host_t = db_api.I, hosts_db.A, hosts_db.H
    placed = sa.select(
        inst.c.uuid, inst.c.host, sa.literal('instance'), inst.c.flavor_name,
        inst.c.vcpus, inst.c.memory_mb, inst.c.disk_gb,
        sa.literal(db_api.utcnow(), sa.DateTime)).where(
            inst.c.host.in_(hosts), inst.c.task_id.is_(None))

    def used(column):
        return sa.select(sa.func.coalesce(sa.func.sum(column), 0)).where(
            alloc.c.host == host_t.c.name).scalar_subquery()

    def txn(conn):
        conn.execute(alloc.insert().from_select(
            ['instance_uuid', 'host', 'purpose', 'flavor_name', 'vcpus',
             'memory_mb', 'disk_gb', 'created_at'], placed))
        conn.execute(host_t.update().where(host_t.c.name.in_(hosts)).values(
            used_vcpus=used(alloc.c.vcpus),
            used_memory_mb=used(alloc.c.memory_mb),
            used_disk_gb=used(alloc.c.disk_gb)))
        conn.execute(host_t.update().where(host_t.c.name.in_(hosts)).values(
            free_memory_mb=host_t.c.memory_mb * host_t.c.ram_ratio
            - host_t.c.used_memory_mb))
    statedb.db.transaction(txn)


def reporters(conf, conductor, hosts, journal_dir):
    """One agent Reporter per host, not started: the caller paces them."""
    out = []
    for host in hosts:
        drv = fake.FakeDriver(state_dir=conf.state_dir)
        drv.init_host(host)
        out.append(reporter_mod.Reporter(
            host=host, driver=drv, conductor=conductor, conf=conf,
            journal=journal_mod.TaskJournal(
                os.path.join(journal_dir, '%s-tasks.json' % host))))
    return out


def full_report(rep):
    return rep.full_report()


def cycle(reps, *, period, workers, send=None):
    """One round of full reports, host ``i`` due at ``i * period / n``
    seconds after the start (``period`` 0: all at once), sent by
    ``workers`` threads. Returns (seconds the round took, the largest lag
    of a report's answer after its due time, failures)."""
    start = time.monotonic()
    step = period / len(reps) if reps else 0
    lock = threading.Lock()
    todo = iter(range(len(reps)))
    lags, failures = [], []

    def work():
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            due = start + i * step
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if not (send or full_report)(reps[i]):
                failures.append(reps[i].host)
            lags.append(time.monotonic() - due)
    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - start, max(lags, default=0.0), failures
