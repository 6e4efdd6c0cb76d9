"""Issue 25 on real QEMU (TCG): a stopped guest cold-migrated to another
host boots there, on the disk it wrote before it moved.

Two hosts, each an agent on a private libvirtd of its own, the plane and
its REST API (:mod:`tests.functional.qemu_plane`), as the live migration's
test has them. A guest of the test image writes a marker on its disk (raw,
past the image's end: no file system involved), is stopped, and moved with
``migrate`` to the other host through the conductor and both agents: the
source flattens its disk into the plane's image store (a private temporary
image), the destination fetches it, checks its SHA-256 and defines the
domain on it (:mod:`conductor.migrate`). The server ends RESIZED (Nova's
VERIFY_RESIZE) and SHUTOFF on the destination with allocations on both
hosts; once confirmed and started it boots there (``BOOT-OK`` with its
uuid, read from its config drive, carried with the disk), reads the
marker back from its disk, its console log there starts with what it
wrote on the source, and nothing of it is left on the source, nor any
temporary image.

Skipped like the live migration test (:mod:`.test_live_migration_on_real_qemu`):
it runs in ``tox -e migration``; the default suite runs it only with
``TRISTATE_TEST_MIGRATION=1`` (two TCG boots and the disk copy: 150 s
here on a loaded machine).
"""

import os

import pytest

from common import context
from common.db import images as images_db
from conductor import migrate
from tests.functional import qemu_plane
from tests.functional import qemu_support
from tests.functional import test_images_on_real_qemu as images_test
from tests.functional import test_live_migration_on_real_qemu as live_test

BOOT_TIMEOUT = images_test.BOOT_TIMEOUT
MOVE_TIMEOUT = 120.0
MARKER = 'MOVED-DISK-7f3a9c'
# 512 MiB into the 1 GiB disk: past the test image's end (~24 MiB), so the
# guest's own files never meet it; read back with dd after the move.
SEEK_MIB = 512

pytestmark = pytest.mark.skipif(
    not os.environ.get('TRISTATE_TEST_MIGRATION')
    and not os.environ.get('TRISTATE_MIGRATION_ENV'),
    reason='the real-QEMU cold migration runs in tox -e migration (or with '
           'TRISTATE_TEST_MIGRATION=1)')


def _action(qemu, server_id, body):
    qemu.compute('POST', '/servers/%s/action' % server_id, body)


def _temporary_images(qemu):
    return [i['id'] for i in images_db.list_images(
        qemu.plane.statedb, context.get_admin_context(),
        limit=images_db.MAX_LIMIT)
        if migrate.PROPERTY in i['properties'] and i['status'] != 'deleted']


def test_a_stopped_guest_moves_cold_and_boots_on_the_destination():
    qemu_plane.require_tools()
    with qemu_support.qemu_dir() as directory, \
            qemu_plane.qemu_plane(('hosta', 'hostb')) as qemu:
        image_id = qemu.upload(live_test._image(directory),  # noqa: SLF001
                               'test-image', 'qcow2')
        server = qemu.boot('cold', image_id, 'hosta', config_drive=True)
        uuid = server['id']
        with qemu.console(server) as console:
            console.wait_for('BOOT-OK %s' % uuid, BOOT_TIMEOUT)
            console.type_line(
                'echo %s > /tmp/m && dd if=/tmp/m of=/dev/vda bs=1M seek=%d '
                'conv=notrunc,fsync && echo WROTE-OK' % (MARKER, SEEK_MIB))
            console.wait_for('WROTE-OK', 30)
        _action(qemu, uuid, {'os-stop': None})
        stopped = qemu.settled(uuid)
        assert stopped['status'] == 'SHUTOFF', qemu.show({'server': stopped})

        # the destination's fetch and define on a loaded machine: more
        # than the plane's 5 s (read at each call by agents and conductor)
        qemu.plane.conf.set_override('rpc_timeout', 60, group='conductor')
        _action(qemu, uuid, {'migrate': {'host': 'hostb'}})
        moved = qemu.settled(uuid, timeout=MOVE_TIMEOUT)

        assert moved['status'] == 'VERIFY_RESIZE', qemu.show(
            {'server': moved})
        assert moved['OS-EXT-SRV-ATTR:host'] == 'hostb', moved
        held = {(a['host'], a['purpose']) for a in
                qemu.plane.statedb.list_allocations(instance_uuid=uuid)}
        assert held == {('hosta', 'instance'), ('hostb', 'resize')}, held
        assert qemu.domains('hostb') == [uuid]
        assert _temporary_images(qemu) == []

        _action(qemu, uuid, {'confirmResize': None})
        confirmed = qemu.settled(uuid)
        assert confirmed['status'] == 'SHUTOFF', qemu.show(
            {'server': confirmed})
        qemu.wait_no_domains('hosta')
        _action(qemu, uuid, {'os-start': None})
        started = qemu.settled(uuid)
        assert (started['status'], started['OS-EXT-SRV-ATTR:host']) == (
            'ACTIVE', 'hostb'), qemu.show({'server': started})
        with qemu.console(started) as console:
            # the uuid comes from its config drive, carried with the disk
            console.wait_for('BOOT-OK %s' % uuid, BOOT_TIMEOUT)
            console.type_line('dd if=/dev/vda bs=1M skip=%d count=1 '
                              '2>/dev/null | head -c 40; echo' % SEEK_MIB)
            console.wait_for(MARKER, 30)
        # the console log came along: what the guest wrote on hosta first
        output = qemu.compute('POST', '/servers/%s/action' % uuid,
                              {'os-getConsoleOutput': {}})['output']
        assert output.index('WROTE-OK') < output.rindex('BOOT-OK'), output
        held = [a['host'] for a in
                qemu.plane.statedb.list_allocations(instance_uuid=uuid)]
        assert held == ['hostb'], held
        assert not os.path.exists(qemu.drivers['hosta']._files(  # noqa: SLF001
            uuid).path)
        qemu.delete_server(uuid)
        qemu.wait_no_domains('hostb')


if __name__ == '__main__':         # pragma: no cover
    pytest.main([__file__, '-v'])
