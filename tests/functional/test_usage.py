"""Usage for billing across the whole plane, with the database's clock
injected: a build, a stop, a start and a delete (the agent stopped) bill
exactly the time the instance ran, as os-simple-tenant-usage reports it."""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import wait_heartbeat

HOUR = 3600


def _later(plane, clock, seconds, host):
    """Let ``seconds`` pass; the host's agent is seen alive again after."""
    clock.advance(seconds)
    wait_heartbeat(plane, host, since=clock.now)


def test_build_stop_start_delete_bill_the_running_time(make_plane, clock,
                                                        ctx):
    plane = make_plane(hosts=1, clock=clock)
    api = Api(api_support.make_app(plane), token='%s:%s' % (ctx.user_id,
                                                          ctx.project_id))
    start = clock.now
    inst = active(plane, ctx)
    host = inst['host']
    ran = 0
    _later(plane, clock, 2 * HOUR, host)
    ran += 2 * HOUR
    act(plane, ctx, inst['uuid'], 'stop')
    _later(plane, clock, 5 * HOUR, host)        # stopped: not billed
    act(plane, ctx, inst['uuid'], 'start')
    _later(plane, clock, HOUR // 2, host)
    ran += HOUR // 2
    plane.stop_agent(host)
    plane.client.delete_instance(ctx, inst['uuid'])
    clock.advance(3 * HOUR)                     # deleted: not billed

    resp = api.get('/os-simple-tenant-usage/%s?start=%s&end=%s' % (
        ctx.project_id, start.isoformat(), clock.now.isoformat()))
    assert resp.status_code == 200, resp.get_json()
    usage = resp.get_json()['tenant_usage']
    hours = ran / HOUR
    assert usage['total_hours'] == pytest.approx(hours)
    assert usage['total_vcpus_usage'] == pytest.approx(hours * inst['vcpus'])
    assert usage['total_memory_mb_usage'] == pytest.approx(
        hours * inst['memory_mb'])
    assert usage['total_local_gb_usage'] == pytest.approx(
        hours * inst['disk_gb'])
    (server,) = usage['server_usages']
    assert (server['instance_id'], server['flavor'], server['state']) == (
        inst['uuid'], inst['flavor_name'], 'terminated')
    deleted = plane.statedb.get_instance(inst['uuid'])['hard_deleted_at']
    assert server['ended_at'] == deleted.isoformat()
