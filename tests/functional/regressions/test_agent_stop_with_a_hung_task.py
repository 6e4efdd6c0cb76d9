"""Stopping an agent while a driver call hangs ended only when the hang did.

``AgentService.stop`` waited for its RPC server's running tasks before it
told the driver to stop, and the driver's stop is what wakes a hung call: a
``tristate-all`` stopped with a hang fault set stayed up for
``[fake_driver] hang_timeout`` (an hour). Fixed by stopping the driver
first; the interrupted task then fails cleanly at once.
"""

import time

from common import states
from common.states import task
from common.states import vm
from tests.functional.conftest import active
from tests.functional.conftest import faults
from tests.functional.conftest import last_log
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_task


def test_stopping_an_agent_ends_its_hung_task_at_once(conf, make_plane, ctx):
    set_opts(conf, 'fake_driver', hang_timeout=60.0)
    plane = make_plane()
    inst = active(plane, ctx)
    host = inst['host']
    faults(plane, host).set_fault('power_off', 'hang')
    plane.client.run_action(ctx, inst['uuid'], 'stop')
    wait_task(plane, inst['uuid'], task.STOPPING)

    started = time.monotonic()
    plane.stop_agent(host)

    assert time.monotonic() - started < 10
    after = wait_idle(plane, inst['uuid'])
    assert after['vm_state'] == vm.ACTIVE, summary(after)
    entry = last_log(plane, inst['uuid'])
    assert (entry['action'], entry['result']) == (
        'stop', states.RESULT_ROLLED_BACK)
    assert 'hung until the host stopped' in entry['message']
