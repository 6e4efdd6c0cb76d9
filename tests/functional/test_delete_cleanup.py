"""After a hard delete made in the database (the API tier's), a conductor
asks the instance's host to destroy the domain. Since conductor RPC 1.5 the
request says the host, and a conductor with no notification to send does
not read the row again; a caller capped below 1.5 still gets its cleanup,
from the row."""

import pytest

from common.states import vm
from conductor import rpcapi as conductor_rpcapi
from tests.functional.conftest import active
from tests.functional.conftest import notifications_on
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_domain


def counting_reads(plane, monkeypatch):
    """Rows the conductor reads by uuid from now on."""
    db = plane.conductor.manager.db
    real = db.get_instance
    reads = []

    def counted(uuid, *args, **kwargs):
        reads.append(uuid)
        return real(uuid, *args, **kwargs)
    monkeypatch.setattr(db, 'get_instance', counted)
    return reads


@pytest.mark.parametrize('cap, notify, reads_row', [
    (None, False, False),       # 1.5: the host is said, nothing to notify
    ('1.4', False, True),       # an API tier capped below 1.5
    (None, True, True),         # a notification needs the row
])
def test_the_deleted_instances_domain_is_destroyed(
        conf, make_plane, ctx, monkeypatch, cap, notify, reads_row):
    if cap:
        set_opts(conf, 'upgrade_levels', conductor=cap)
    if notify:
        notifications_on(conf)
    plane = make_plane(hosts=1)
    inst = active(plane, ctx)
    uuid = inst['uuid']
    reads = counting_reads(plane, monkeypatch)
    api = conductor_rpcapi.ConductorAPI(plane.bus, conf,
                                        statedb=plane.statedb)

    after = api.delete_instance(ctx, uuid)

    assert after['vm_state'] == vm.HARD_DELETED
    wait_domain(plane, inst['host'], uuid, lambda rec: rec is None,
                what='the domain destroyed')
    assert (uuid in reads) is reads_row

