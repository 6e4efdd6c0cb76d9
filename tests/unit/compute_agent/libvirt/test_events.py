"""Lifecycle events: reported within the debounce, a reboot's stop/start
absorbed, stale events dropped, failed deliveries kept and retried."""

import threading
import time

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.states import power  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import WAIT  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402


def spawn(drv, recorder=None):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    if recorder is not None:
        recorder.wait_for(uuid, power.RUNNING)
    return uuid


def behind_back(drv, uuid):
    return drv.connection.get().lookupByUUIDString(uuid)


def test_events_are_reported_after_the_debounce(make_driver, recorder):
    drv = make_driver(event_debounce=0.2)
    drv.watch(recorder)
    uuid = spawn(drv, recorder)
    started = time.monotonic()
    behind_back(drv, uuid).shutdown()
    recorder.wait_for(uuid, power.SHUTDOWN, 'guest')
    elapsed = time.monotonic() - started
    assert 0.2 <= elapsed < 0.2 + WAIT


def test_a_reboot_inside_the_guest_is_not_reported_as_a_shutdown(
        make_driver, recorder):
    drv = make_driver(event_debounce=0.3)
    drv.watch(recorder)
    rebooted, marker = spawn(drv, recorder), spawn(drv, recorder)
    mark = recorder.mark()
    dom = behind_back(drv, rebooted)
    dom.destroy()                  # the guest's stop and start, back to back
    dom.create()
    behind_back(drv, marker).destroy()
    # Reports go out in the order their debounce ends: once the marker's is
    # in, the rebooted domain's would be too.
    recorder.wait_for(marker, power.SHUTDOWN, 'host', since=mark)
    assert recorder.of(rebooted)[-1:] == [(power.RUNNING, None)]
    assert (power.SHUTDOWN, 'host') not in recorder.infos_of(rebooted, mark)


def test_a_stale_event_is_dropped(make_driver, recorder):
    drv = make_driver()
    drv.watch(recorder)
    uuid, marker = spawn(drv, recorder), spawn(drv, recorder)
    mark = recorder.mark()
    # A STOPPED event arriving late: the domain runs again by now.
    drv._on_lifecycle(None, behind_back(drv, uuid),
                      libvirt.VIR_DOMAIN_EVENT_STOPPED,
                      libvirt.VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN, None)
    behind_back(drv, marker).destroy()
    recorder.wait_for(marker, power.SHUTDOWN, 'host', since=mark)
    assert recorder.infos_of(uuid, mark) == []


def test_a_vanished_domain_is_reported_nostate(make_driver, recorder):
    drv = make_driver()
    drv.watch(recorder)
    uuid = spawn(drv, recorder)
    behind_back(drv, uuid).destroy()
    behind_back(drv, uuid).undefine()
    recorder.wait_for(uuid, power.NOSTATE)


class FlakyCallback:
    """Raises while ``failing`` is set; records what it took otherwise."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.failing = threading.Event()
        self.attempts = []
        self.attempted = threading.Condition()

    def __call__(self, info):
        with self.attempted:
            self.attempts.append(info)
            self.attempted.notify_all()
        if self.failing.is_set():
            raise ConnectionError('conductor unreachable')
        self.recorder(info)

    def wait_attempt(self, predicate):
        with self.attempted:
            assert self.attempted.wait_for(
                lambda: any(predicate(i) for i in self.attempts), timeout=WAIT)


def test_reports_are_kept_while_the_callback_fails_latest_wins(make_driver,
                                                               recorder):
    drv = make_driver()
    flaky = FlakyCallback(recorder)
    drv.watch(flaky)
    uuid = spawn(drv, recorder)
    mark = recorder.mark()
    flaky.failing.set()
    dom = behind_back(drv, uuid)
    dom.shutdown()
    flaky.wait_attempt(lambda i: i.power_state == power.SHUTDOWN)
    dom.create()                          # newer than the undelivered one
    dom.suspend()
    flaky.wait_attempt(lambda i: i.power_state == power.PAUSED)
    flaky.failing.clear()
    recorder.wait_for(uuid, power.PAUSED, 'host', since=mark)
    assert recorder.infos_of(uuid, mark) == [(power.PAUSED, 'host')]


def test_a_failed_report_is_retried_until_taken(make_driver, recorder):
    drv = make_driver()
    flaky = FlakyCallback(recorder)
    drv.watch(flaky)
    uuid = spawn(drv, recorder)
    flaky.failing.set()
    behind_back(drv, uuid).shutdown()
    flaky.wait_attempt(lambda i: i.power_state == power.SHUTDOWN)
    flaky.wait_attempt(lambda i: len(flaky.attempts) >= 4)   # retried
    flaky.failing.clear()
    recorder.wait_for(uuid, power.SHUTDOWN, 'guest')


@pytest.mark.parametrize('debounce', [0.0])
def test_no_debounce_reports_each_change(make_driver, recorder, debounce):
    drv = make_driver(event_debounce=debounce)
    drv.watch(recorder)
    uuid = spawn(drv, recorder)
    behind_back(drv, uuid).suspend()
    recorder.wait_for(uuid, power.PAUSED, 'host')


def test_states_passed_during_the_drivers_own_operation_wait_for_its_end(
        make_driver, recorder):
    drv = make_driver()
    drv.watch(recorder)
    uuid, marker = spawn(drv, recorder), spawn(drv, recorder)
    mark = recorder.mark()
    with drv._book.busy(uuid):          # as while an operation runs on it
        behind_back(drv, uuid).suspend()
        behind_back(drv, marker).destroy()
        recorder.wait_for(marker, power.SHUTDOWN, 'host', since=mark)
        assert recorder.infos_of(uuid, mark) == []
    recorder.wait_for(uuid, power.PAUSED, 'host', since=mark)
