"""``os-migrateLive`` held the API request until the destination was
prepared.

Found in the review of the live migration (issue 25): the conductor asked
the destination's agent to get ready (agent RPC 1.6: its instance folder,
its overlay disk on its own copy of the image, which it fetches first if
it has none) inside ``run_action``, so the request waited for an image
download, up to ``[conductor] rpc_timeout``, and a slow destination held
an API worker thread that long. Fixed: the task goes to the source at
once with ``prepare`` (agent RPC 1.9) and the source, in its task, asks
the conductor for the destination's prepare (conductor RPC 1.18); a
failure there fails the task as before. Here the destination's prepare
is held: the request must answer anyway, the migration then completes.
"""

import threading

from common.states import vm
from tests.functional.conftest import active
from tests.functional.conftest import TIMEOUT
from tests.functional.conftest import wait_idle


def test_the_request_answers_before_the_destination_is_ready(
        plane, ctx, admin):
    inst = active(plane, ctx)
    [dest] = [h for h in plane.host_names if h != inst['host']]
    target = plane.agents[dest].manager
    prepare = target.prepare_live_migration
    asked, gate = threading.Event(), threading.Event()

    def held(*args, **kwargs):
        asked.set()
        gate.wait(TIMEOUT)
        return prepare(*args, **kwargs)
    target.prepare_live_migration = held
    answered = threading.Event()

    def request():
        plane.client.run_action(admin, inst['uuid'], 'live_migrate', {})
        answered.set()
    thread = threading.Thread(target=request, daemon=True)
    thread.start()
    try:
        assert asked.wait(TIMEOUT), 'the destination was never asked'
        assert answered.wait(TIMEOUT), 'the request waits for the prepare'
    finally:
        gate.set()
        thread.join(TIMEOUT)

    after = wait_idle(plane, inst['uuid'])
    assert (after['vm_state'], after['host']) == (vm.ACTIVE, dest)
