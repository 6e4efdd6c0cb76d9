"""An offload destroyed the only copy of a shelved server's disk.

A shelved (not offloaded) server keeps its disk on its host; its snapshot
is an image of its owner's, which the owner may delete (``DELETE
/images/{id}``, as in Nova). ``shelveOffload`` (the admin's, or the
periodic sweep after ``[compute] shelved_offload_time``) then destroyed
the domain and its disk all the same: the server was offloaded naming a
snapshot that no longer existed, every later unshelve failed, and the
guest's data was gone with no one told. Found by the session-15 design
review of shelving (what an offload may destroy). Fixed:
conductor/shelve.py refuses the offload (409, naming why) of a server with
no snapshot of its own to unshelve from; the sweep leaves it shelved on
its host, where an unshelve powers it on with its disk.
"""

import logging

from common.states import vm
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_heartbeat


def test_no_offload_without_the_snapshot(conf, make_plane, clock, caplog):
    set_opts(conf, 'compute', shelved_offload_time=600)
    plane = make_plane(clock=clock)
    api = Api(api_support.make_app(plane), token=api_support.ADMIN_TOKEN)
    server = api.active(name='keep')
    host = api.host(server['id'])
    api.action(server['id'], {'shelve': None})
    wait_for(lambda: api.settled(server['id'])['status'] == 'SHELVED',
             what='the server to be shelved')
    image_id = plane.statedb.get_instance(server['id'])['shelved_image_id']
    # the owner deletes it (the image API of Nova's proxy, before 2.36)
    assert api.delete('/images/%s' % image_id,
                      version='2.1').status_code == 204

    resp = api.post('/servers/%s/action' % server['id'],
                    {'shelveOffload': None})
    assert resp.status_code == 409, resp.get_json()
    assert 'snapshot' in message(resp)
    # nor the sweep, once the offload time has passed
    clock.advance(601)
    for name in plane.host_names:       # alive on the advanced clock
        wait_heartbeat(plane, name, since=clock.now)
    caplog.set_level(logging.INFO, logger='conductor.shelve')
    assert plane.conductor.periodic.run_once()['shelved']['offloaded'] == 0
    # said once, not at every pass of the sweep
    assert plane.conductor.periodic.run_once()['shelved']['offloaded'] == 0
    told = [r for r in caplog.records if 'not offloaded now' in r.message
            and r.levelno >= logging.INFO]
    assert len(told) == 1 and 'snapshot' in told[0].message
    inst = plane.statedb.get_instance(server['id'])
    assert (inst['vm_state'], inst['host'], inst['task_id']) == (
        vm.SHELVED, host, None)
    assert domain(plane, host, server['id']) is not None
    # the disk is still there: unshelve powers it on where it is
    api.action(server['id'], {'unshelve': None})
    back = api.settled(server['id'])
    assert (back['status'], api.host(server['id'])) == ('ACTIVE', host)
