"""The conductor's reconcile and report handling over a real database,
with the agent replaced by a recorder: what test_reconcile_db.py and
test_full_report_backends.py both drive. The ``conf`` and ``world``
fixtures are used by importing them into the test module; ``world`` takes
the module's ``statedb``."""

import pytest
import sqlalchemy as sa
from oslo_config import cfg

from common import actions
from common.conf import register_all
from common.db import api
from common.db import models
from common.states import task
from conductor import gateway as gw
from conductor import reconcile
from conductor import results as results_mod
from tests.conftest import HOST
from tests.conftest import Instances

I = models.Instance.__table__       # noqa: E741 (as in common/db/api.py)
# [reconcile] crash_restart_window of the conf fixture
WINDOW = 600
# A host's capacity in a heartbeat.
CAPACITY = {'vcpus': 8, 'memory_mb': 8192, 'disk_gb': 80}


@pytest.fixture
def conf():
    """Defaults, with a known crash restart window."""
    conf = cfg.ConfigOpts()
    register_all(conf)
    conf([], project='tristate', default_config_files=[])
    conf.set_override('crash_restart_window', WINDOW, group='reconcile')
    yield conf
    conf.reset()


def report_of(uuid, power_state, seq, reason=None):
    """One domain's power report, as an agent sends it."""
    return {'uuid': uuid, 'power_state': power_state, 'reason': reason,
            'seq': seq}


class Notifier:
    def __init__(self):
        self.sent = []

    def _record(self, ctx, event_type, payload_type, payload):
        self.sent.append((event_type, payload))

    info = error = _record

    def events(self):
        return [event for event, _payload in self.sent]


class Flows:
    """Records what reconcile would send to the agent."""

    def __init__(self):
        self.sent = []
        self.destroyed = []

    def send(self, task_ctx, host, inst, action, params):
        self.sent.append((task_ctx, host, inst, action, params))

    def request_destroy(self, ctx, inst):
        self.destroyed.append((inst['host'], inst['uuid']))


class World:
    """The gateway, the reconciler and instances, over one database."""

    def __init__(self, statedb, conf, ctx, clock):
        self.db = statedb
        self.clock = clock
        self.ctx = ctx
        self.notifier = Notifier()
        self.gateway = gw.TaskGateway(statedb, self.notifier)
        self.flows = Flows()
        self.reconciler = reconcile.Reconciler(
            gateway=self.gateway, flows=self.flows, conf=conf)
        self.results = results_mod.Results(
            gateway=self.gateway, conf=conf, reconciler=self.reconciler)
        self.instances = Instances(statedb, ctx)
        self._seq = 0

    def idle(self, vm_state, **policies):
        """An idle instance in ``vm_state`` placed on HOST."""
        uuid = self.instances.in_state(vm_state)
        if self.db.get_instance(uuid)['host'] is None:
            # ERROR, PENDING and INITIALIZED made without a host: place it,
            # as a build that got as far as allocating would have.
            self.set_columns(uuid, host=HOST)
        if policies:
            self.db.set_policies(uuid, **policies)
        return uuid

    def busy(self, vm_state, **policies):
        """An instance in ``vm_state`` with a task running; its task_id."""
        uuid = self.idle(vm_state, **policies)
        startable = sorted(
            a for a in actions.TABLE.actions
            if actions.TABLE.action(a).kind == actions.KIND_TASK
            and vm_state in actions.TABLE.allowed_from(a))
        if startable:
            task_id = self.db.claim_task(self.ctx, uuid,
                                         startable[0])['task_id']
        else:
            # No task can start from ERROR or HARD_DELETED; the guard is
            # the same whatever put the task there.
            task_id = api.new_uuid()
            self.set_columns(uuid, task_id=task_id,
                             task_state=task.DESTROYING, task_action='delete')
        return uuid, task_id

    def set_columns(self, uuid, **values):
        self.db.db.transaction(lambda conn: conn.execute(
            sa.update(I).where(I.c.uuid == uuid).values(**values)))

    def report(self, uuid, power_state, reason=None, *, seq=None):
        """Store a report from HOST, as results.power_report does."""
        self._seq = seq if seq is not None else self._seq + 1
        return self.db.store_power_report(uuid, host=HOST, state=power_state,
                                          reason=reason, seq=self._seq)

    def report_seq(self):
        """A sequence newer than every report so far (for a task's end)."""
        self._seq += 1
        return self._seq

    def snapshot(self, uuid):
        return self.db.get_instance(uuid), self.db.list_actions(uuid)


@pytest.fixture
def world(statedb, conf, ctx, clock):
    """The gateway, reconciler and results over the module's ``statedb``."""
    return World(statedb, conf, ctx, clock)
