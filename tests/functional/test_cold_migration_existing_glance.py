"""Cold migration with an existing Glance as the image service (issue 25):
refused with a 400 that says it is not supported yet and why (the disk
goes through a temporary image only Tristate's own image service grants
to one host to write and another to read), nothing changed; a resize with
room on its host still runs there."""

from common.states import vm
from tests.functional import api_support
from tests.functional.conftest import active
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_idle


def test_migrate_with_an_existing_glance_is_a_400_saying_why(plane, ctx):
    set_opts(plane.conf, 'image', api_endpoint='http://glance.test:9292')
    inst = active(plane, ctx)
    api = api_support.Api(api_support.make_app(plane),
                          token=api_support.ADMIN_TOKEN, version='2.56')

    resp = api.post('/servers/%s/action' % inst['uuid'], {'migrate': None})

    assert resp.status_code == 400, resp.get_json()
    text = str(resp.get_json())
    assert 'existing Glance' in text and 'not supported yet' in text, text
    assert 'api_endpoint' in text and 'temporary image' in text, text
    after = wait_idle(plane, inst['uuid'])
    assert (after['vm_state'], after['host'], after['task_id']) == (
        vm.ACTIVE, inst['host'], None)
    assert plane.statedb.list_allocations(instance_uuid=inst['uuid'])[0][
        'host'] == inst['host']
    # a resize needs no disk copy while its host has room: it runs there
    plane.client.run_action(ctx, inst['uuid'], 'resize', {'flavor': 'small'})
    after = wait_idle(plane, inst['uuid'])
    assert (after['vm_state'], after['host']) == (vm.RESIZED, inst['host'])
