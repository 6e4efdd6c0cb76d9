"""A cold migration whose source agent died after uploading the disk left
the temporary image (record and data) in the image store for ever.

Found when reviewing the cold migration's failure paths (issue 25): the
temporary image was deleted by the conductor once the destination had
received it (``migration_disk_sent``), after a failure the source
reported, or by the instance's delete; a source that died between its
upload and that call (a crash, a lost connection) reported nothing, the
reaper ended the task, and the image stayed. Fixed: a move's task ended
for a vanished agent (the reaper, or the agent's lost tasks at its start)
deletes the instance's temporary images, and the next move of the
instance deletes any of its earlier attempts before it makes its own
(conductor/results.py ``_end_vanished``, conductor/migrate.py
``prepare``). Here the source's call to the conductor fails and its
failure report is lost, as a dead agent's would be.
"""

import datetime

from common import context
from common import rpc
from common.db import images as images_db
from common.states import vm
from conductor import migrate
from tests.functional.conftest import wait_agent_done
from tests.functional.test_cold_migration import no_temporary_image
from tests.functional.test_cold_migration import plane  # noqa: F401
from tests.functional.test_cold_migration import run
from tests.functional.test_cold_migration import served  # noqa: F401
from tests.functional.test_cold_migration import written

LATER = datetime.timedelta(days=1)        # past any task's timeout


def _dies_after_upload(plane, source, monkeypatch):  # noqa: F811
    manager = plane.agents[source].manager

    def dies(*args, **kwargs):
        raise rpc.MessagingTimeout('the source agent died after its upload')
    monkeypatch.setattr(manager.conductor, 'migration_disk_sent', dies,
                        raising=False)
    monkeypatch.setattr(manager.conductor, 'task_failed',
                        lambda *a, **k: None, raising=False)


def test_the_reaper_deletes_the_image_a_dead_source_left(
        plane, ctx, admin, monkeypatch):  # noqa: F811
    inst, source, dest = written(plane, ctx)
    uuid = inst['uuid']
    _dies_after_upload(plane, source, monkeypatch)
    plane.client.run_action(admin, uuid, 'migrate', {})
    wait_agent_done(plane, source)
    assert not no_temporary_image(plane), 'the scenario leaves an image'
    monkeypatch.undo()

    reaped = plane.conductor.periodic.results.reap(
        admin, plane.statedb.clock() + LATER)

    assert reaped >= 1
    after = plane.statedb.get_instance(uuid)
    assert (after['vm_state'], after['host'], after['task_id']) == (
        vm.ACTIVE, source, None)
    assert no_temporary_image(plane)


def test_the_next_migration_deletes_an_earlier_attempts_image(
        plane, ctx, admin):  # noqa: F811
    inst, source, dest = written(plane, ctx)
    uuid = inst['uuid']
    # what an attempt of an older conductor left
    images_db.create(plane.statedb, context.get_admin_context(), {
        'name': 'migration of %s' % uuid, 'owner': migrate.OWNER,
        'visibility': 'private', 'disk_format': 'qcow2',
        'container_format': 'bare', 'min_disk': 0, 'min_ram': 0,
        'properties': {migrate.PROPERTY: uuid}})
    assert not no_temporary_image(plane)

    after = run(plane, admin, uuid, 'migrate')

    assert (after['vm_state'], after['host']) == (vm.RESIZED, dest)
    assert no_temporary_image(plane)
    run(plane, admin, uuid, 'confirm_resize')
