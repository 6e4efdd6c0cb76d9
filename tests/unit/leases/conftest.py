"""Leases over the ``db`` fixture (SQLite, and PostgreSQL when configured),
with the fake clock: hosts, a lease maker, a way to put a lease in any
status, and the lease flows with recording fakes for instances and
notifications."""

import datetime

import pytest
import sqlalchemy as sa
from oslo_config import cfg

from common import conf as tconf
from common import leases as rules
from common.db import leases as leases_db
from common.db import models
from common.leases import event as ev
from common.leases import lease as ls
from common.leases import reservation as rs
from conductor.leases import events
from conductor.leases import flows as lease_flows

HOUR = datetime.timedelta(hours=1)
HOSTS = ('h1', 'h2', 'h3')
L = models.Lease.__table__
R = models.Reservation.__table__
E = models.LeaseEvent.__table__

# A (reservation, start_lease, end_lease) combination seed 002 allows, per
# lease status; DELETING is the one with an event IN_PROGRESS.
CANONICAL = {
    ls.CREATING: (rs.PENDING, ev.UNDONE, ev.UNDONE),
    ls.PENDING: (rs.PENDING, ev.UNDONE, ev.UNDONE),
    ls.STARTING: (rs.PENDING, ev.IN_PROGRESS, ev.UNDONE),
    ls.ACTIVE: (rs.ACTIVE, ev.DONE, ev.UNDONE),
    ls.TERMINATING: (rs.ACTIVE, ev.DONE, ev.IN_PROGRESS),
    ls.TERMINATED: (rs.DELETED, ev.DONE, ev.DONE),
    ls.DELETING: (rs.ACTIVE, ev.IN_PROGRESS, ev.UNDONE),
    ls.UPDATING: (rs.PENDING, ev.UNDONE, ev.UNDONE),
    ls.ERROR: (rs.ERROR, ev.ERROR, ev.UNDONE),
}


def host_spec(count=1, props=''):
    return {'resource_type': rules.RESOURCE_HOST, 'min_hosts': count,
            'max_hosts': count, 'hypervisor_properties': props}


@pytest.fixture
def lease_conf():
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], default_config_files=[])
    yield conf
    conf.reset()


@pytest.fixture
def ldb(db, clock, statedb):
    for i, name in enumerate(HOSTS):
        statedb.host_heartbeat(name, vcpus=8 * (i + 1),
                               memory_mb=8192 * (i + 1), disk_gb=100)
    ldb = leases_db.LeaseDB(db, clock=clock)
    for name in HOSTS:      # an admin put them into the reservable pool
        ldb.set_reservable(name, True)
    return ldb


@pytest.fixture
def make_lease(ldb, ctx, clock):
    """``make_lease(start_in=1h, hours=1, count=1, ...)``: a PENDING lease."""
    def make(*, start_in=HOUR, hours=1, count=1, props='', name='lease',
             before_end=None, on_end='delete', context=None):
        start = clock() + start_in
        return ldb.create_lease(
            context or ctx, name=name, start=start,
            end=start + hours * HOUR, before_end=before_end, on_end=on_end,
            reservations=[host_spec(count, props)])
    return make


def force(ldb, lease_id, status, combination=None):
    """Put the lease in ``status`` with a combination seed 002 allows (or
    the one given), by hand, as a crash half-way could leave it."""
    res, start, end = combination or CANONICAL[status]

    def txn(conn):
        conn.execute(sa.update(L).where(L.c.id == lease_id)
                     .values(status=status))
        conn.execute(sa.update(R).where(R.c.lease_id == lease_id)
                     .values(status=res))
        for event_type, value in (('start_lease', start), ('end_lease', end)):
            running = value == ev.IN_PROGRESS
            conn.execute(sa.update(E).where(
                E.c.lease_id == lease_id, E.c.event_type == event_type)
                .values(status=value, attempts=int(running),
                        run_id='run-by-hand' if running else None,
                        claimed_at=ldb.clock() if running else None))
    ldb.db.transaction(txn)
    return ldb.get_lease(lease_id)


def event_of(lease, event_type):
    return next(e for e in lease['events'] if e['event_type'] == event_type)


class FakeInstanceFlows:
    """Records what the lease flows ask of the instance flows."""

    def __init__(self):
        self.calls = []

    def delete(self, ctx, uuid):
        self.calls.append(('delete', uuid))

    def run_action(self, ctx, uuid, action, params):
        self.calls.append((action, uuid))


class FakeNotifier:
    def __init__(self):
        self.sent = []

    def info(self, ctx, event_type, name, data):
        self.sent.append((event_type, data))

    def types(self):
        return [event_type for event_type, _ in self.sent]


@pytest.fixture
def lflows(ldb, lease_conf):
    return lease_flows.LeaseFlows(db=ldb, flows=FakeInstanceFlows(),
                                  notifier=FakeNotifier(), conf=lease_conf)


@pytest.fixture
def runner(ldb, lflows, lease_conf):
    return events.EventRunner(db=ldb, flows=lflows, conf=lease_conf)


FLAVOR_ARGS = {'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}
