"""An event that reads the power state the conductor was already told is
not sent again; anything else is, in order, and the full report always."""

import threading

from common.states import power
from compute_agent import reporter as reporter_mod
from compute_agent.virt.driver import DomainInfo

UUID = '11111111-2222-3333-4444-555555555555'


class Driver:
    """One domain whose state the test sets."""

    def __init__(self):
        self.state = power.RUNNING

    def get_domain(self, uuid):
        return DomainInfo(uuid, self.state, None) if uuid == UUID else None

    def list_domains(self):
        return [DomainInfo(UUID, self.state, None)]

    def cleanup_preserved(self):
        pass


class Conductor:
    """Records the power reports it stores; ``down`` refuses them."""

    def __init__(self):
        self.stored = []
        self.down = threading.Event()

    def power_report(self, ctx, *, host, reports, full):
        if self.down.is_set():
            raise ConnectionError('conductor away')
        self.stored.append(([r['power_state'] for r in reports], full))
        return {}

    def carries_power(self):
        return False


def reporter():
    driver, conductor = Driver(), Conductor()
    rep = reporter_mod.Reporter(host='h', driver=driver, conductor=conductor,
                                conf=None, journal=_Journal())
    return rep, driver, conductor


class _Journal:
    def lost(self):
        return []


def event(rep):
    rep.domain_changed(DomainInfo(UUID, None, None))
    rep.flush()


def test_an_event_that_says_what_a_tasks_result_said_is_not_sent():
    rep, driver, conductor = reporter()
    # the task's result told the conductor RUNNING
    rep.delivered.record([reporter_mod.read_domain(driver, UUID)])

    event(rep)                  # the build's own "started" event
    assert conductor.stored == []

    driver.state = power.SHUTDOWN
    event(rep)                  # news: sent
    driver.state = power.RUNNING
    event(rep)                  # news again, since SHUTDOWN was told
    assert conductor.stored == [([power.SHUTDOWN], False),
                                ([power.RUNNING], False)]


def test_a_waiting_report_is_replaced_even_by_the_state_told_before():
    rep, driver, conductor = reporter()
    rep.delivered.record([reporter_mod.read_domain(driver, UUID)])
    conductor.down.set()
    driver.state = power.SHUTDOWN
    event(rep)                  # kept: the conductor is away
    driver.state = power.RUNNING
    event(rep)                  # the conductor was told RUNNING, but the
    conductor.down.clear()      # SHUTDOWN waiting must not be sent alone
    rep.flush()
    assert conductor.stored == [([power.RUNNING], False)]


def test_the_full_report_is_sent_whatever_was_told():
    rep, driver, conductor = reporter()
    rep.delivered.record([reporter_mod.read_domain(driver, UUID)])
    assert rep.full_report()
    assert rep.full_report()
    assert [states for states, _ in conductor.stored] == [[power.RUNNING]] * 2
    assert all(full for _, full in conductor.stored)


def test_a_domain_the_full_read_did_not_find_is_forgotten():
    delivered = reporter_mod.Delivered()
    older = {'uuid': UUID, 'power_state': power.RUNNING, 'reason': None,
             'seq': 5}
    delivered.record([older])
    assert delivered.has(dict(older, seq=6))
    delivered.record([], full=10)
    assert not delivered.has(dict(older, seq=11))
    # but not one told of after the read began
    delivered.record([dict(older, seq=12)])
    delivered.record([], full=10)
    assert delivered.has(dict(older, seq=13))


def test_an_older_result_does_not_overwrite_a_newer_report():
    delivered = reporter_mod.Delivered()
    new = {'uuid': UUID, 'power_state': power.SHUTDOWN, 'reason': 'guest',
           'seq': 20}
    delivered.record([new])
    delivered.record([dict(new, power_state=power.RUNNING, reason=None,
                           seq=10)])
    assert delivered.has(dict(new, seq=21))
    assert not delivered.has(dict(new, power_state=power.RUNNING,
                                  reason=None, seq=21))


# --- events of a domain whose task runs on the agent ----------------------------

def test_an_event_during_a_task_waits_and_is_not_sent_if_the_result_said_it():
    rep, driver, conductor = reporter()
    rep.delivered.task_began(UUID)
    event(rep)                  # the build's domain appears: held
    assert conductor.stored == []
    # the task's result, read at its end, told the conductor RUNNING
    rep.delivered.record([reporter_mod.read_domain(driver, UUID)])
    rep.delivered.task_ended(UUID)
    rep.flush()
    assert conductor.stored == []


def test_an_event_during_a_task_is_read_again_and_sent_at_its_end():
    rep, driver, conductor = reporter()
    rep.delivered.task_began(UUID)
    driver.state = power.SHUTDOWN
    event(rep)
    assert conductor.stored == []
    # a task that sent no power (it failed before reading it); the guest
    # is RUNNING again by the time the task ends: that is what is sent
    driver.state = power.RUNNING
    rep.delivered.task_ended(UUID)
    rep.flush()
    assert conductor.stored == [([power.RUNNING], False)]


def test_an_event_of_another_domain_or_after_the_task_is_not_held():
    rep, driver, conductor = reporter()
    rep.delivered.task_began('another-domain')
    driver.state = power.SHUTDOWN
    event(rep)
    rep.delivered.task_ended('another-domain')
    driver.state = power.RUNNING
    event(rep)
    assert conductor.stored == [([power.SHUTDOWN], False),
                                ([power.RUNNING], False)]


def test_the_full_report_carries_a_domain_whose_task_runs():
    rep, driver, conductor = reporter()
    rep.delivered.task_began(UUID)
    driver.state = power.CRASHED
    event(rep)
    assert rep.full_report()
    [(reported, full)] = conductor.stored
    assert reported == [power.CRASHED] and full


def test_a_read_that_fails_after_the_task_is_left_to_the_full_report():
    rep, driver, conductor = reporter()
    rep.delivered.task_began(UUID)
    event(rep)

    def gone(uuid):
        raise ConnectionError('libvirtd away')
    driver.get_domain = gone
    rep.delivered.task_ended(UUID)          # does not raise
    rep.flush()
    assert conductor.stored == []
