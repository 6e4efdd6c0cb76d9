"""A server with a config drive could not move: cold and live migration
(and a resize that had to leave its host) were refused.

Found as a limit left by issue 25 (the operator guide said so, and
``tristate host drain`` named such servers as not movable): the ISO lives
in the agent's state directory of the source host and nothing wrote it on
another. Fixed: it goes with the guest, its very bytes (a live guest may
have it mounted; a new one would differ in its random seed and dates and
lack the admin password, which is never kept): in the cold move's
``disk`` (conductor RPC 1.16) and the destination's ``receive`` params
(agent RPC 1.8), and in the live move's prepare, which the source asks
for in its task (conductor RPC 1.18, agent RPC 1.6 params); the
destination places it at its own path and attaches it (on libvirt the
CD-ROM of the migrated definition points there; ``NON_SHARED_INC`` copies
only writable disks). The source's copy goes with its domain (confirm) or
once the guest runs on the destination (live).
"""

import os

from common.states import vm
from compute_agent import configdrive
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import wait_domain
from tests.functional.conftest import wait_for
from tests.functional.test_cold_migration import plane  # noqa: F401
from tests.functional.test_cold_migration import run
from tests.functional.test_cold_migration import served  # noqa: F401

USER_DATA = 'IyEvYmluL3NoCmVjaG8gZmlyc3QgYm9vdAo='   # a script: echo first boot


def _with_drive(plane, ctx):  # noqa: F811
    inst = active(plane, ctx, attributes={'config_drive': True,
                                          'user_data': USER_DATA})
    source = inst['host']
    [dest] = [h for h in plane.host_names if h != source]
    path = configdrive.path(plane.conf, source, inst['uuid'])
    with open(path, 'rb') as f:
        return inst['uuid'], source, dest, f.read()


def _drive(plane, host, uuid):  # noqa: F811
    path = configdrive.path(plane.conf, host, uuid)
    if not os.path.exists(path):
        return None
    with open(path, 'rb') as f:
        return f.read()


def test_cold_migration_carries_the_config_drive(plane, ctx, admin):  # noqa: F811
    uuid, source, dest, iso = _with_drive(plane, ctx)

    after = run(plane, admin, uuid, 'migrate')

    assert (after['vm_state'], after['host']) == (vm.RESIZED, dest)
    assert _drive(plane, dest, uuid) == iso
    assert domain(plane, dest, uuid)['config_drive'] == configdrive.path(
        plane.conf, dest, uuid)
    assert _drive(plane, source, uuid) == iso      # kept for a revert
    after = run(plane, admin, uuid, 'confirm_resize')
    assert (after['vm_state'], after['host']) == (vm.ACTIVE, dest)
    wait_domain(plane, source, uuid, lambda rec: rec is None,
                what='the source copy destroyed')
    # removed right after the domain
    wait_for(lambda: _drive(plane, source, uuid) is None,
             what='the source\'s config drive removed')
    assert _drive(plane, dest, uuid) == iso


def test_live_migration_carries_the_config_drive(plane, ctx, admin):  # noqa: F811
    uuid, source, dest, iso = _with_drive(plane, ctx)

    after = run(plane, admin, uuid, 'live_migrate')

    assert (after['vm_state'], after['host']) == (vm.ACTIVE, dest)
    assert _drive(plane, dest, uuid) == iso
    assert _drive(plane, source, uuid) is None
