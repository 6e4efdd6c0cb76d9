"""The state metrics, read from the database at scrape time (the API and
the conductors; see :mod:`common.metrics`)."""

import datetime

from prometheus_client import core as prom_core
import sqlalchemy as sa

from common import reconcile
from common import states
from common.db import models

_I = models.Instance.__table__
_H = models.Host.__table__
_GONE = (states.power.NOSTATE, states.power.SHUTDOWN)


class StateCollector:
    """``tristate_instances`` and the agents' up/down, from the database.

    Hard-deleted instances count only while their domain may still exist
    (oper_state ERROR_up): the others are history. A host is up when its
    agent's last heartbeat is younger than ``[conductor] service_down_time``.
    """

    def __init__(self, statedb, conf):
        self.statedb = statedb
        self.conf = conf

    def collect(self):
        alive_since = self.statedb.clock() - datetime.timedelta(
            seconds=self.conf.conductor.service_down_time)
        groups, hosts = self.statedb.db.transaction(
            self._read, alive_since, readonly=True)
        yield self._instances(groups)
        yield from self._agents(hosts)

    @staticmethod
    def _read(conn, alive_since):
        host_up = sa.case((_H.c.last_heartbeat >= alive_since, True),
                          else_=False).label('host_up')
        keys = (_I.c.vm_state, _I.c.task_state, _I.c.power_state,
                _I.c.power_reason, (_I.c.host.is_not(None)).label('placed'),
                host_up)
        groups = conn.execute(
            sa.select(*keys, sa.func.count().label('n'))
            .select_from(_I.outerjoin(_H, _I.c.host == _H.c.name))
            .where(sa.or_(_I.c.vm_state != states.vm.HARD_DELETED,
                          _I.c.power_state.not_in(_GONE)))
            .group_by(*keys)).all()
        hosts = conn.execute(sa.select(
            _H.c.name, (_H.c.last_heartbeat >= alive_since).label('up'))).all()
        return groups, hosts

    @staticmethod
    def _instances(groups):
        family = prom_core.GaugeMetricFamily(
            'tristate_instances', 'Instances per vm_state, task_state (empty: '
            'no task) and oper_state, read from the database at scrape time.',
            labels=['vm_state', 'task_state', 'oper_state'])
        counts = {}
        for row in groups:
            oper = reconcile.oper_state(
                {'vm_state': row.vm_state, 'power_state': row.power_state,
                 'power_reason': row.power_reason,
                 'host': 'placed' if row.placed else None},
                host_up=bool(row.host_up))
            key = (row.vm_state, row.task_state or '', oper)
            counts[key] = counts.get(key, 0) + row.n
        for key, n in sorted(counts.items()):
            family.add_metric(list(key), n)
        return family

    @staticmethod
    def _agents(hosts):
        up = prom_core.GaugeMetricFamily(
            'tristate_agent_up', '1 if the compute agent of the host sent a '
            'heartbeat within [conductor] service_down_time, else 0.',
            labels=['host'])
        total = prom_core.GaugeMetricFamily(
            'tristate_agents', 'Compute agents per state (up, down).',
            labels=['state'])
        n_up = 0
        for row in sorted(hosts, key=lambda r: r.name):
            up.add_metric([row.name], 1 if row.up else 0)
            n_up += 1 if row.up else 0
        total.add_metric(['up'], n_up)
        total.add_metric(['down'], len(hosts) - n_up)
        return up, total
