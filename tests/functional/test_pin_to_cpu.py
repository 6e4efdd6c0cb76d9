"""``tristate-all`` with ``[DEFAULT] pin_to_cpu``: every thread of the
running daemon (its API, conductor, agents, bus and the threads they start
for builds) is on that CPU, and the plane works."""

import os

import pytest

from tests import support
from tests.functional.test_cli import AllInOne
from tests.functional.test_cli import _disk

ALLOWED = os.sched_getaffinity(0)


def _cpus_of_threads(pid):
    """{tid: Cpus_allowed_list} of every thread of process ``pid``."""
    out = {}
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/status' % (pid, tid)) as f:
                for line in f:
                    if line.startswith('Cpus_allowed_list:'):
                        out[tid] = line.split(':', 1)[1].strip()
        except FileNotFoundError:
            continue        # ended meanwhile
    return out


@pytest.mark.skipif(len(ALLOWED) < 2, reason='one CPU: nothing to pin to '
                    'that the process is not on')
def test_every_thread_of_tristate_all_runs_on_the_pinned_cpu(tmp_path):
    cpu = max(ALLOWED)
    plane = AllInOne(tmp_path)
    (tmp_path / 'empty.conf').write_text('[DEFAULT]\npin_to_cpu = %d\n' % cpu)
    try:
        plane.start()
        plane.run('image', 'create', 'pinned-img', '--file',
                  _disk(tmp_path / 'disk.raw'), '--disk-format', 'raw')
        plane.run('server', 'create', 'pinned-vm', '--image', 'pinned-img',
                  '--flavor', 'tiny', '--wait')
        threads = _cpus_of_threads(plane.proc.pid)
        assert len(threads) > 10        # the plane's threads, not just main
        assert set(threads.values()) == {str(cpu)}, threads
        assert ('Every thread of this process runs on CPU %d' % cpu
                in plane.log_path.read_text())
    finally:
        support.stop(plane.proc)
