"""The reaper's and the lost-task path's "failed" lines named another task.

"Task X (stop) on instance Y failed" was logged before the gateway made
the failed task's context the thread's current one, so the line carried
the tags of whatever the thread had worked on before: the previous task
the reaper ended, or the heartbeat that reported the lost tasks
(``[task: -]``). ``grep TASK_ID`` missed them (149 of 153 such lines in
one run). Found by an adversarial session on the embedded plane (issue
19, item 4). Fixed: the gateway sets the task's context (its task_id and
``[instance: ...]``) before it logs, and the periodic jobs start each job
from their own context again.
"""

import logging
import os
import re

from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log as oslo_log
import pytest

from common import context as tcontext
from common.states import task
from compute_agent import journal
from tests.functional.conftest import active
from tests.functional.conftest import faults
from tests.functional.conftest import wait_hung
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_task

STOP_TIMEOUT = 600
FAILED = re.compile(r'Task (\S+) \(\w+\) on instance (\S+) failed')


class Lines(logging.Handler):
    """The conductor's lines, formatted as its log file has them."""

    def __init__(self):
        super().__init__(logging.INFO)
        conf = cfg.ConfigOpts()
        oslo_log.register_options(conf)
        conf([])
        conf.set_override('logging_context_format_string',
                          tcontext.LOG_CONTEXT_FORMAT)
        self.setFormatter(formatters.ContextFormatter(project='tristate',
                                                      config=conf))
        self.lines = []

    def emit(self, record):
        self.lines.append(self.format(record))

    def failed(self):
        """[(line, task_id, instance_uuid)] of the "Task ... failed" lines."""
        return [(line, m.group(1), m.group(2)) for line in self.lines
                for m in [FAILED.search(line)] if m]


@pytest.fixture
def lines():
    handler = Lines()
    logger = logging.getLogger('conductor')
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def _assert_tagged(failed, tasks):
    assert sorted(task_id for _line, task_id, _uuid in failed) == sorted(tasks)
    for line, task_id, uuid in failed:
        assert '[task: %s]' % task_id in line, line
        assert '[instance: %s]' % uuid in line, line


def test_reaped_tasks_are_logged_with_their_own_tags(make_plane, clock, ctx,
                                                     lines):
    plane = make_plane(hosts=1, clock=clock)
    insts = [active(plane, ctx, name=name) for name in ('first', 'second')]
    faults(plane, 'host1').set_fault('power_off', 'hang', count=2)
    hung = {}
    for inst in insts:
        plane.client.run_action(ctx, inst['uuid'], 'stop')
        hung[inst['uuid']] = wait_task(plane, inst['uuid'],
                                       task.STOPPING)['task_id']
    wait_hung(plane, 'host1', 'power_off')      # both calls hang

    clock.advance(STOP_TIMEOUT + 1)
    assert plane.conductor.periodic.run_once()['reaped'] == 2

    _assert_tagged(lines.failed(), hung.values())


def test_lost_tasks_are_logged_with_their_own_tags(make_plane, ctx, lines):
    plane = make_plane(hosts=1)
    host = 'host1'
    for name in ('first', 'second'):
        active(plane, ctx, name=name)
    plane.stop_agent(host)
    agent_journal = journal.TaskJournal(os.path.join(
        plane.conf.state_dir, 'agent', '%s-tasks.json' % host))
    lost = []
    for inst in plane.statedb.list_instances():
        if inst['host'] != host:
            continue
        claimed = plane.statedb.claim_task(ctx, inst['uuid'], 'stop')
        agent_journal.add(claimed['task_id'], inst['uuid'], 'stop')
        lost.append((inst['uuid'], claimed['task_id']))
    agent_journal.close()
    assert lost

    plane.start_agent(host)
    for uuid, _task_id in lost:
        wait_idle(plane, uuid)

    _assert_tagged(lines.failed(), [task_id for _uuid, task_id in lost])
