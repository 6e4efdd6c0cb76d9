"""The topology of a server of a huge NUMA flavor listed every vCPU.

A flavor may have up to 2**31 - 1 vCPUs, and ``hw:numa_nodes=2`` on it was
taken: a create in a project with no cores quota stored cells of
``0-1073741822`` and ``1073741823-2147483645`` (as ranges: cheap), the
build was buried (no host has the room), and ``GET
/servers/{id}/topology`` (2.78) then built Nova's ``vcpu_set`` list of
every one of them: no answer within 10 s, its API thread taking memory
until the process died, for every user of that API. Found by the
session-16 hostile-input review (a flavor at its bounds, the owner asking
for its topology). Fixed: common/numa.py refuses guest NUMA cells of more
than 4096 vCPUs (QEMU's most) with a 400 at create, nothing stored, and
the topology route refuses to list cells stored before (409), at once.
"""


import pytest
import sqlalchemy as sa

from common.db import models
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import answered_within
from tests.functional.api_support import message

HUGE = 2 ** 31 - 2


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def owner(app):
    """A user of a project with no cores or RAM quota."""
    token = api_support.new_project()
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    assert admin.put('/os-quota-sets/%s' % token.split(':')[1], {
        'quota_set': {'cores': -1, 'ram': -1}}).status_code == 200
    return Api(app, token=token)


def _flavor(app, vcpus):
    return api_support.new_flavor(
        Api(app, token=api_support.ADMIN_TOKEN), vcpus=vcpus, ram=1024,
        specs={'hw:numa_nodes': '2'})


def _create(owner, flavor):
    return owner.post('/servers', {'server': {
        'name': 'vm', 'flavorRef': flavor, 'imageRef': api_support.IMAGE}})


def test_cells_of_more_vcpus_than_a_guest_has_are_400(app, owner):
    resp = _create(owner, _flavor(app, HUGE))
    assert resp.status_code == 400, resp.get_json()
    said = message(resp)
    assert '%d vCPUs' % HUGE in said and 'at most 4096' in said, said
    assert owner.ids() == []
    # the most is taken (its build is buried: no host has the room)
    resp = _create(owner, _flavor(app, 4096))
    assert resp.status_code == 202, resp.get_json()


def test_cells_stored_before_are_not_listed(app, owner, shared_plane):
    server = owner.create()
    cells = [{'id': 0, 'cpus': '0-1073741822', 'memory_mb': 512},
             {'id': 1, 'cpus': '1073741823-%d' % (HUGE - 1),
              'memory_mb': 512}]
    table = models.Instance.__table__
    shared_plane.statedb.db.transaction(lambda conn: conn.execute(
        sa.update(table).where(table.c.uuid == server['id'])
        .values(numa_cells=cells)))
    resp = answered_within(5, lambda: owner.get(
        '/servers/%s/topology' % server['id'], version='2.78'))
    assert resp.status_code == 409, resp.get_json()
    assert 'not listed' in message(resp)
