"""``[DEFAULT] pin_to_cpu``: a daemon's threads on one CPU (common/affinity.py)."""

import os
import threading

import pytest
from oslo_config import cfg

from common import affinity
from common import conf as tconf
from tests import support

ALLOWED = os.sched_getaffinity(0)
needs_two = pytest.mark.skipif(len(ALLOWED) < 2, reason='one CPU: nothing '
                               'to pin to that the process is not on')


@pytest.fixture
def restored():
    """The process's threads back on every CPU they had."""
    try:
        yield
    finally:
        affinity.set_all(ALLOWED)


@pytest.mark.parametrize('cpus, text', [
    ({0}, '0'), ({0, 1, 2, 3}, '0-3'), ({0, 1, 2, 3, 6}, '0-3,6'),
    ({1, 3, 4, 5, 9}, '1,3-5,9')])
def test_a_cpu_list_is_written_as_linux_writes_it(cpus, text):
    assert affinity.cpu_list(cpus) == text


@needs_two
def test_every_thread_and_every_later_one_runs_on_the_cpu(restored):
    cpu = max(ALLOWED)
    started, go = threading.Event(), threading.Event()

    def waiting():
        started.set()
        go.wait(30)
    before = threading.Thread(target=waiting)
    before.start()
    started.wait(30)
    try:
        affinity.set_all({cpu})
        seen = {}
        after = threading.Thread(
            target=lambda: seen.update(cpus=os.sched_getaffinity(0)))
        after.start()
        after.join(30)
        assert before.native_id in affinity.threads()
        assert support.thread_cpus() == {frozenset({cpu})}
        assert seen['cpus'] == {cpu}        # inherited from its creator
    finally:
        go.set()
        before.join(30)
    affinity.set_all(ALLOWED)
    assert support.thread_cpus() == {frozenset(ALLOWED)}


def test_a_cpu_the_process_may_not_use_stops_the_start(tmp_path):
    cpu = max(ALLOWED) + 1000
    with pytest.raises(SystemExit) as stop:
        support.prepare(tmp_path, '[DEFAULT]\npin_to_cpu = %d\n' % cpu)
    message = str(stop.value.code)
    assert 'invalid configuration, nothing was started' in message
    assert ('[DEFAULT] pin_to_cpu: CPU %d is not one this process may run '
            'on (%s)' % (cpu, affinity.cpu_list(ALLOWED))) in message
    # nothing was pinned
    assert support.thread_cpus() == {frozenset(ALLOWED)}


def _conf(text=None):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate', default_config_files=[])
    if text is not None:
        conf.set_override('pin_to_cpu', text)
    return conf


def test_unset_leaves_the_threads_where_the_kernel_puts_them():
    conf = _conf()
    assert conf.pin_to_cpu is None and affinity.problems(conf) == []
    assert affinity.apply(conf) is False
    assert support.thread_cpus() == {frozenset(ALLOWED)}


@needs_two
def test_apply_pins_the_process_to_the_configured_cpu(restored):
    conf = _conf(min(ALLOWED))
    assert affinity.problems(conf) == []
    assert affinity.apply(conf) is True
    assert support.thread_cpus() == {frozenset({min(ALLOWED)})}
