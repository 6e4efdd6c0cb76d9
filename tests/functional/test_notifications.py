"""Notifications on the bus, as a listener of the deployment receives them:
``instance.update`` with old and new states on every vm_state/task_state
change, ``instance.<action>.start/end`` around a task, ``.error`` when it
fails, and ``select_destinations.*`` from the scheduler.
"""

import logging
import threading
import uuid as uuidlib

import pytest

from common.states import task
from common.states import vm
from tests.functional.conftest import Planes
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import build
from tests.functional.conftest import faults
from tests.functional.conftest import new_conf
from tests.functional.conftest import notifications_on
from tests.functional.conftest import set_opts
from tests.functional.conftest import tidy
from tests.functional.conftest import wait_for

HUGE = 'huge:1:%d:1' % (10 ** 9)        # more RAM than any fake host has


class Collector:
    """A notification endpoint that keeps what it receives."""

    def __init__(self):
        self._lock = threading.Lock()
        self._events = []

    def _keep(self, priority, publisher_id, event_type, payload):
        with self._lock:
            self._events.append({'priority': priority,
                                 'publisher_id': publisher_id,
                                 'event_type': event_type,
                                 'name': payload['tristate_object.name'],
                                 'version': payload['tristate_object.version'],
                                 'data': payload['tristate_object.data']})

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._keep('INFO', publisher_id, event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._keep('ERROR', publisher_id, event_type, payload)

    def of(self, uuid):
        with self._lock:
            return [e for e in self._events if uuid in (
                e['data'].get('uuid'), e['data'].get('instance_uuid'))]

    def wait(self, uuid, event_type, *, updated_to=None):
        """The events of ``uuid`` once ``event_type`` is among them and, if
        ``updated_to`` (vm_state, task_state) is given, an
        ``instance.update`` to it too. ERROR notifications travel on their
        own topic, so an ``.error`` can overtake the INFO update sent
        before it."""
        def arrived():
            events = self.of(uuid)
            types = {e['event_type'] for e in events}
            if event_type not in types:
                return None
            if updated_to is not None and tuple(updated_to) not in [
                    u[2:] for u in _updates(events)]:
                return None
            return events
        return wait_for(
            arrived, what='notification %s of %s' % (event_type, uuid),
            show=lambda: [e['event_type'] for e in self.of(uuid)])


@pytest.fixture(scope='module')
def notified(tmp_path_factory):
    """A plane that notifies, and a listener on its bus."""
    conf = new_conf(tmp_path_factory.mktemp('plane'))
    notifications_on(conf)
    set_opts(conf, 'conductor', flavors=conf.conductor.flavors + [HUGE])
    planes = Planes(conf)
    plane = planes.start(hosts=2)
    collector = Collector()
    listener = plane.bus.notification_listener(
        [collector], pool='functional-%s' % uuidlib.uuid4().hex)
    listener.start()
    yield plane, collector
    listener.stop()
    listener.wait()
    planes.stop_all()
    conf.reset()


@pytest.fixture
def plane(notified):
    yield notified[0]
    tidy(notified[0])


@pytest.fixture
def collector(notified):
    return notified[1]


def _updates(events):
    return [(e['data']['old_vm_state'], e['data']['old_task_state'],
             e['data']['vm_state'], e['data']['task_state'])
            for e in events if e['event_type'] == 'instance.update']


def _task_events(events, action):
    return [(e['event_type'], e['priority']) for e in events
            if e['event_type'].startswith('instance.%s.' % action)]


def test_a_successful_task_is_notified_from_start_to_end(plane, collector,
                                                         ctx):
    inst = active(plane, ctx)
    act(plane, ctx, inst['uuid'], 'stop')

    events = collector.wait(inst['uuid'], 'instance.stop.end')

    assert _updates(events) == [
        (None, None, vm.INITIALIZED, task.BUILDING),
        (vm.INITIALIZED, task.BUILDING, vm.ACTIVE, None),
        (vm.ACTIVE, None, vm.ACTIVE, task.STOPPING),
        (vm.ACTIVE, task.STOPPING, vm.STOPPED, None)]
    assert _task_events(events, 'build') == [
        ('instance.build.start', 'INFO'), ('instance.build.end', 'INFO')]
    assert _task_events(events, 'stop') == [
        ('instance.stop.start', 'INFO'), ('instance.stop.end', 'INFO')]
    scheduled = [e for e in events
                 if e['event_type'].startswith('select_destinations.')]
    assert [e['event_type'] for e in scheduled] == [
        'select_destinations.start', 'select_destinations.end']
    assert scheduled[-1]['data']['host'] == inst['host']
    end = [e for e in events if e['event_type'] == 'instance.stop.end'][0]
    assert (end['name'], end['version'], end['publisher_id']) == (
        'InstanceActionPayload', '1.0', 'conductor.conductor')
    assert (end['data']['vm_state'], end['data']['host'],
            end['data']['task_id']) == (vm.STOPPED, inst['host'], None)


def test_a_failed_task_is_notified_as_an_error(plane, collector, ctx):
    inst = active(plane, ctx)
    faults(plane, inst['host']).set_fault('power_off', 'fail', count=1)
    act(plane, ctx, inst['uuid'], 'stop')

    events = collector.wait(inst['uuid'], 'instance.stop.error',
                            updated_to=(vm.ACTIVE, None))

    [error] = [e for e in events if e['event_type'] == 'instance.stop.error']
    assert error['priority'] == 'ERROR'
    assert 'injected fault: power_off' in error['data']['error']
    assert error['data']['rolled_back'] is True
    assert error['data']['vm_state'] == vm.ACTIVE
    # the two updates may be delivered in either order (one notifier per
    # thread): the rollback's is among them
    assert (vm.ACTIVE, task.STOPPING, vm.ACTIVE, None) in _updates(events)
    assert ('instance.stop.end', 'INFO') not in _task_events(events, 'stop')


def test_no_valid_host_is_notified(plane, collector, ctx):
    inst = build(plane, ctx, flavor='huge')
    assert inst['vm_state'] == vm.ERROR

    events = collector.wait(inst['uuid'], 'instance.build.error',
                            updated_to=(vm.ERROR, None))

    [failed] = [e for e in events
                if e['event_type'] == 'select_destinations.error']
    assert failed['priority'] == 'ERROR'
    assert 'none of the rest has room for flavor huge' in (
        failed['data']['error'])
    assert _updates(events)[-1] == (vm.INITIALIZED, task.BUILDING, vm.ERROR,
                                    None)
    [buried] = [e for e in events if e['event_type'] == 'instance.build.error']
    assert buried['data']['error'] == (
        'No valid host was found: ' + failed['data']['error'])


def test_a_hard_delete_is_notified(plane, collector, ctx):
    inst = active(plane, ctx)
    plane.client.delete_instance(ctx, inst['uuid'])

    events = collector.wait(inst['uuid'], 'instance.delete.end')

    [update] = [e for e in events if e['event_type'] == 'instance.update'
                and e['data']['vm_state'] == vm.HARD_DELETED]
    assert (update['data']['task_state'], update['data']['host']) == (
        None, inst['host'])


def test_a_hard_delete_is_notified_with_the_old_states(plane, collector, ctx):
    inst = active(plane, ctx)
    plane.client.delete_instance(ctx, inst['uuid'])

    events = collector.wait(inst['uuid'], 'instance.delete.end')

    assert _updates(events)[-1] == (vm.ACTIVE, None, vm.HARD_DELETED, None)


def test_a_password_never_appears_in_logs_notifications_or_the_log(
        plane, collector, ctx, caplog):
    """changePassword's secret reaches the driver and nothing else: not a
    log line (at DEBUG, every module), not a notification, not the action
    log, even when the task fails."""
    caplog.set_level(logging.DEBUG)
    secret = 'pw-%s' % uuidlib.uuid4().hex
    inst = active(plane, ctx)
    done = act(plane, ctx, inst['uuid'], 'set_password', password=secret)
    assert done['task_id'] is None
    faults(plane, inst['host']).set_fault('set_password', 'fail')
    failed = act(plane, ctx, inst['uuid'], 'set_password', password=secret)
    assert failed['task_id'] is None
    events = collector.wait(inst['uuid'], 'instance.set_password.error')
    logged = '\n'.join(r.getMessage() for r in caplog.records)
    assert 'set_password' in logged         # the records were captured
    assert secret not in logged
    assert secret not in repr(events)
    assert secret not in repr(plane.statedb.list_actions(inst['uuid']))


def test_a_rescue_password_is_never_notified(plane, collector, ctx):
    inst = active(plane, ctx)
    plane.client.run_action(ctx, inst['uuid'], 'rescue',
                            {'password': 'Never-Shown-7'})
    events = collector.wait(inst['uuid'], 'instance.rescue.end')
    assert 'Never-Shown-7' not in repr(events)


def test_a_rename_is_notified_with_the_old_name(plane, collector, ctx):
    inst = active(plane, ctx)
    plane.client.rename_instance(ctx, inst['uuid'], name='renamed')
    renamed = wait_for(
        lambda: [e for e in collector.of(inst['uuid'])
                 if 'old_display_name' in e['data']],
        what='instance.update of the rename')
    assert [(e['event_type'], e['data']['old_display_name'],
             e['data']['name']) for e in renamed] == [
        ('instance.update', inst['name'], 'renamed')]
