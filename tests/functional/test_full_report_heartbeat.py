"""The periodic full power report rides on a heartbeat (conductor RPC 1.4):
one message per host per period instead of two. An agent capped below 1.4
sends it on its own, as power_report. Either way, it is the safety net that
sees what no event said (here: a domain that vanished while its agent was
down)."""

import pytest

from common import exception
from common.states import power
from common.states import vm
from conductor import rpcapi as conductor_rpcapi
from tests.functional.conftest import active
from tests.functional.conftest import heartbeat_of
from tests.functional.conftest import outside
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_instance

CAPACITY = {'vcpus': 4, 'memory_mb': 4096, 'disk_gb': 40}


def spy(plane, monkeypatch, method):
    """The keyword arguments of every call the conductor answers to
    ``method`` from now on (the RPC dispatcher looks the method up on
    the endpoint for each message)."""
    manager = plane.conductor.manager
    real = getattr(manager, method)
    calls = []

    def recording(ctx, **kwargs):
        calls.append(kwargs)
        return real(ctx, **kwargs)
    monkeypatch.setattr(manager, method, recording)
    return calls


def vanish_while_down(plane, ctx):
    """An ACTIVE instance whose domain vanished while its agent was down;
    the agent is started again. Only a full report can tell."""
    uuid = active(plane, ctx)['uuid']
    plane.stop_agent('host1')
    outside(plane, 'vanish', uuid)
    plane.start_agent('host1')
    row = wait_instance(plane, uuid,
                        lambda i: i['vm_state'] == vm.ERROR and not i['task_id'],
                        what='vm_state error from the full report')
    assert row['power_state'] == power.NOSTATE
    return uuid


def test_the_full_report_rides_on_a_heartbeat(make_plane, ctx, monkeypatch):
    plane = make_plane(hosts=1)
    beats = spy(plane, monkeypatch, 'heartbeat')
    reports = spy(plane, monkeypatch, 'power_report')

    vanish_while_down(plane, ctx)

    carried = [b['power'] for b in beats if b.get('power') is not None]
    assert carried, 'no heartbeat carried a full report'
    assert all(isinstance(p['full'], int) and p['full'] > 0 for p in carried)
    # nothing went as a full report of its own
    assert [r for r in reports if r['full']] == []


def test_full_reports_keep_their_period_when_heartbeats_are_rarer(
        conf, make_plane):
    set_opts(conf, 'compute', heartbeat_interval=600, power_sync_interval=0.2)
    plane = make_plane(hosts=1)
    reporter = plane.agents['host1'].reporter
    first = heartbeat_of(plane, 'host1')
    target = reporter.full_reports_sent + 3
    wait_for(lambda: reporter.full_reports_sent >= target,
             what='three more full reports, every 0.2 s')
    # each went in a heartbeat, early: the host was seen again since
    assert heartbeat_of(plane, 'host1') > first


def test_an_agent_capped_at_1_3_sends_full_reports_on_their_own(
        conf, make_plane, ctx, monkeypatch):
    set_opts(conf, 'upgrade_levels', conductor='1.3')
    plane = make_plane(hosts=1)
    beats = spy(plane, monkeypatch, 'heartbeat')
    reports = spy(plane, monkeypatch, 'power_report')

    vanish_while_down(plane, ctx)

    assert [r for r in reports if r['full']], 'no full power_report was sent'
    # the report can come before the restarted agent's first heartbeat
    wait_for(lambda: beats, what='a heartbeat after the restart')
    assert all(b.get('power') is None for b in beats)


def test_a_capped_client_refuses_to_carry_a_report(conf, make_plane, ctx):
    set_opts(conf, 'upgrade_levels', conductor='1.3')
    plane = make_plane(hosts=1)
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    assert not capped.carries_power()
    with pytest.raises(exception.ServiceUnavailable) as err:
        capped.heartbeat(ctx, host='host1', capacity=CAPACITY,
                         started_at=None, power={'reports': [], 'full': 1})
    assert 'conductor RPC API 1.4' in err.value.message


@pytest.mark.parametrize('power_arg, wrong', [
    ({'reports': []}, 'power {'),
    ({'reports': [], 'full': 1, 'extra': 2}, 'power {'),
    ([], 'power []'),
    ({'reports': {}, 'full': 1}, 'power reports {}'),
    ({'reports': [], 'full': True}, 'power full True'),
    ({'reports': [], 'full': 0}, 'power full 0'),
    ({'reports': [], 'full': '12'}, "power full '12'"),
    ({'reports': [], 'full': 2 ** 63}, 'power full %d' % 2 ** 63),
])
def test_a_malformed_carried_report_is_refused_and_nothing_stored(
        plane, ctx, power_arg, wrong):
    client = conductor_rpcapi.ConductorAPI(plane.bus, plane.conf)
    with pytest.raises(exception.Invalid) as err:
        client.heartbeat(ctx, host='newhost', capacity=CAPACITY,
                         started_at=None, power=power_arg)
    assert wrong in err.value.message
    assert "expected {'reports': [report, ...], 'full':" in err.value.message
    # not even the heartbeat: the host is still unknown
    assert heartbeat_of(plane, 'newhost') is None
