"""An evacuation to a named host that could not take the server answered
200 and did nothing; ``force`` did not do what Nova's does.

Found when checking ``evacuate``'s ``force`` against Nova's at each
microversion (issue 25): Tristate sent every named host through the
scheduler's filters except with ``force``, and even then refused a
disabled host; a host that could not take the server (disabled, full,
down) ended the task quietly, the request answered 200 and only the
action log said why. Nova, before 2.29, takes a named host without the
scheduler (its API passes it so), from 2.29 does so only with ``force``
(removed at 2.68), and a forced host may be disabled (only the
scheduler's filter looks at that); its room is still claimed.

Fixed (conductor/evacuate.py, api/evacuate.py): before 2.29 a named host
is forced; a forced host may be disabled; a named host that cannot take
the server is refused at once with a 409 that says why (disabled, without
force; no room, with the resources short; its agent down), the task ended
rolled back, nothing changed.
"""

from common.states import vm
from tests.functional import api_support
from tests.functional.test_evacuate import _host_dies
from tests.functional.test_evacuate import _on


def _post(plane, server, version, body):
    api = api_support.Api(plane.app, token=api_support.ADMIN_TOKEN,
                          version=version)
    return api, api.post('/servers/%s/action' % server, {'evacuate': body})


def _unchanged(plane, server):
    inst = plane.statedb.get_instance(server)
    assert (inst['host'], inst['vm_state'], inst['task_id']) == (
        'host1', vm.ACTIVE, None)
    assert {a['host'] for a in plane.statedb.list_allocations(
        instance_uuid=server)} == {'host1'}


def test_named_hosts_are_novas_and_refusals_say_why(
        conf, make_plane, clock, ctx):
    plane = make_plane(hosts=2, clock=clock)
    admin = ctx.elevated()
    servers = [_on(plane, admin, 'host1')['uuid'] for _ in range(3)]
    plane.statedb.set_host_enabled('host2', False, 'new disks')
    _host_dies(plane, clock, conf, 'host1')
    plane.app = api_support.make_app(plane)

    # 2.29 without force, and 2.68: through the filters: refused, says why
    for version, body in (('2.29', {'host': 'host2'}),
                          ('2.68', {'host': 'host2'})):
        _, resp = _post(plane, servers[0], version, body)
        assert resp.status_code == 409, (version, resp.get_json())
        text = str(resp.get_json())
        assert 'host2' in text and 'disabled (new disks)' in text, text
        assert 'force' in text, text
        _unchanged(plane, servers[0])

    # forced (2.29) and a named host before 2.29: the disabled host taken
    for server, version, body in (
            (servers[0], '2.29', {'host': 'host2', 'force': True}),
            (servers[1], '2.1', {'host': 'host2',
                                 'onSharedStorage': False})):
        api, resp = _post(plane, server, version, body)
        assert resp.status_code == 200, (version, resp.get_json())
        assert api.settled(server)['OS-EXT-SRV-ATTR:host'] == 'host2'

    # no room left there (the vCPU ratio made such that host2's vCPUs
    # are all taken): refused even when forced, with what is short
    host2 = plane.statedb.get_host('host2')
    plane.statedb.set_host_enabled('host2', True)
    conf.set_override('cpu_allocation_ratio', host2['used_vcpus'] / max(
        host2['vcpus'], 1), group='scheduler')
    try:
        _, resp = _post(plane, servers[2], '2.29', {'host': 'host2',
                                                    'force': True})
    finally:
        conf.clear_override('cpu_allocation_ratio', group='scheduler')
    assert resp.status_code == 409, resp.get_json()
    text = str(resp.get_json())
    assert 'no room' in text and 'vCPUs needed' in text, text
    _unchanged(plane, servers[2])
    assert 'no room' in plane.statedb.list_actions(
        servers[2])[-1]['message']
