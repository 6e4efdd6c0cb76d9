"""``tristate server stop --wait`` exited 0 when the stop failed.

``--wait`` polled until no task ran on the server and printed it; how the
task had ended was never looked at. A stop the hypervisor refused (rolled
back: the server still ACTIVE), a reboot that left the server in ERROR
and a build that no host would take all exited 0, so a script that waits
and checks the exit status went on as if they had worked. Found reading
the CLI for issue 22 ("today a failed stop or a reboot ending in ERROR
exits 0").

Fixed: a command that starts a task keeps the task id the API answers
(``Tristate-Task-Id``); once the server has settled, ``--wait`` reads that
task's entry in the action log and exits 1, after showing the server,
unless it ended ``success`` (:mod:`api.cli.waits`). While it waits it
writes the status and progress step to stderr.
"""

import json

import pytest

from tests.functional.test_cli import AllInOne
from tests.functional.test_cli import _disk

HOSTS = ('host1', 'host2')


@pytest.fixture(scope='module')
def tristate(tmp_path_factory):
    plane = AllInOne(tmp_path_factory.mktemp('tristate-all-wait'))
    try:
        plane.start()
        plane.json('image', 'create', 'base', '--file',
                   _disk(plane.state_dir / 'base.raw'))
        yield plane
    finally:
        plane.stop()


def _fault(tristate, operation, mode):
    for host in HOSTS:
        tristate.fakevirt('fault', host, operation, mode)


def _clear(tristate):
    for host in HOSTS:
        tristate.fakevirt('clear-faults', host)


def _failed(done):
    """The server a failed ``--wait`` still shows, and its stderr."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    return json.loads(done.stdout), done.stderr


def test_a_stop_that_rolled_back_exits_1(tristate):
    server = tristate.json('server', 'create', 'stopme', '--flavor', 'tiny',
                           '--image', 'base', '--wait')
    _fault(tristate, 'power_off', 'fail')
    try:
        shown, err = _failed(tristate.run('server', 'stop', 'stopme',
                                          '--wait', '-f', 'json', ok=False))
    finally:
        _clear(tristate)
    assert shown['status'] == 'ACTIVE'          # rolled back, unchanged
    assert 'The task failed' in err and '(stop)' in err
    assert 'rolled_back' in err and server['id'] in err
    # the status was shown while it waited (at least the settled one)
    assert '%s: ACTIVE\n' % server['id'] in err
    # without a fault the same command exits 0
    stopped = tristate.json('server', 'stop', 'stopme', '--wait')
    assert stopped['status'] == 'SHUTOFF'


def test_a_reboot_ending_in_error_exits_1(tristate):
    tristate.json('server', 'create', 'rebootme', '--flavor', 'tiny',
                  '--image', 'base', '--wait')
    _fault(tristate, 'reboot', 'fail_no_rollback')
    try:
        shown, err = _failed(tristate.run('server', 'reboot', 'rebootme',
                                          '--hard', '--wait', '-f', 'json',
                                          ok=False))
    finally:
        _clear(tristate)
    assert shown['status'] == 'ERROR'
    assert '(reboot_hard)' in err and 'ended error' in err
    # reset-state to error is what was asked: exit 0
    reset = tristate.json('server', 'reset-state', 'rebootme', '--state',
                          'error', '--wait')
    assert reset['status'] == 'ERROR'


def test_a_build_no_host_takes_exits_1(tristate):
    _fault(tristate, 'spawn', 'fail_no_rollback')
    try:
        shown, err = _failed(tristate.run('server', 'create', 'nohost',
                                          '--flavor', 'tiny', '--image',
                                          'base', '--wait', '-f', 'json',
                                          ok=False))
    finally:
        _clear(tristate)
    assert shown['status'] in ('ERROR', 'PENDING')
    assert '(build)' in err and 'The task failed' in err
