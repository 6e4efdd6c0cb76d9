"""Quotas in the database: checked in the transaction that creates or
claims, on SQLite and PostgreSQL; freed by a hard delete; a resize holds the
larger flavor until confirmed or reverted. Usage intervals follow vm_state
with the injected clock."""

import pytest

from common import exception
from common.db import quotas
from common.states import vm
from tests.conftest import FLAVOR
from tests.unit.db.test_concurrency import _race

BUILDS = 30
LIMIT = 10


def _limit(statedb, count_pending=True, **limits):
    defaults = dict.fromkeys(quotas.RESOURCES, quotas.UNLIMITED)
    defaults.update(limits)
    statedb.quota = quotas.Settings(defaults, count_pending)


def _usage(statedb, project='demo'):
    return statedb.get_quotas(project)['usage']


def test_concurrent_builds_never_pass_the_limit(statedb, instances):
    _limit(statedb, instances=LIMIT)
    outcomes = _race(BUILDS, lambda i: instances.create('vm%d' % i))
    accepted = [v for kind, v in outcomes if kind == 'ok']
    refused = [v for kind, v in outcomes if kind == 'err']
    assert len(accepted) == LIMIT
    assert len(refused) == BUILDS - LIMIT
    assert all(isinstance(e, exception.QuotaExceeded) for e in refused), \
        refused
    assert all(e.code == 403 for e in refused)
    # a refused build left nothing behind
    assert len(statedb.list_instances()) == LIMIT
    assert _usage(statedb)['instances'] == LIMIT


def test_refusal_names_resource_limit_usage_and_request(statedb, instances):
    _limit(statedb, cores=FLAVOR['vcpus'] + 1)
    instances.create()
    with pytest.raises(exception.QuotaExceeded) as err:
        instances.create()
    message = err.value.message
    assert 'cores' in message
    assert 'requested %d' % FLAVOR['vcpus'] in message
    assert 'used %d of %d' % (FLAVOR['vcpus'], FLAVOR['vcpus'] + 1) in message


def test_hard_delete_frees_at_once(statedb, ctx, instances):
    _limit(statedb, instances=1)
    uuid = instances.active()
    with pytest.raises(exception.QuotaExceeded):
        instances.create()
    statedb.hard_delete(ctx, uuid)
    assert _usage(statedb) == dict(quotas.NOTHING, lease_hosts=0,
                                   lease_hours=0)
    instances.create()
    assert _usage(statedb)['instances'] == 1


def test_soft_deleted_keeps_its_quota(statedb, instances):
    _limit(statedb, instances=1)
    uuid = instances.in_state(vm.SOFT_DELETED)
    assert _usage(statedb)['instances'] == 1
    with pytest.raises(exception.QuotaExceeded):
        instances.create()
    instances.run(uuid, 'restore')      # checked, and it still fits
    assert _usage(statedb)['instances'] == 1


def _resize_to(instances, uuid, **flavor):
    new = dict(FLAVOR, **flavor)
    claimed = instances.db.claim_task(instances.ctx, uuid, 'resize',
                                      flavor=new)
    return instances.ctx.for_task(claimed['task_id']), new


def test_resize_counts_the_difference(statedb, instances):
    uuid = instances.active()
    grow = 3
    _limit(statedb, cores=FLAVOR['vcpus'] + grow - 1)
    with pytest.raises(exception.QuotaExceeded) as err:
        _resize_to(instances, uuid, vcpus=FLAVOR['vcpus'] + grow)
    assert 'requested %d' % grow in err.value.message
    assert statedb.get_instance(uuid)['task_id'] is None   # nothing changed
    _limit(statedb, cores=FLAVOR['vcpus'] + grow)
    task, new = _resize_to(instances, uuid, vcpus=FLAVOR['vcpus'] + grow)
    assert _usage(statedb)['cores'] == new['vcpus']
    statedb.finish_task(task, uuid, values=dict(
        new, flavor_name='bigger'))
    assert _usage(statedb)['cores'] == new['vcpus']     # RESIZED: both
    instances.run(uuid, 'confirm_resize')
    assert _usage(statedb)['cores'] == new['vcpus']


def test_revert_settles_back_to_the_old_flavor(statedb, instances):
    uuid = instances.active()
    task, new = _resize_to(instances, uuid, vcpus=FLAVOR['vcpus'] * 2,
                           memory_mb=FLAVOR['memory_mb'] // 2)
    held = _usage(statedb)
    assert (held['cores'], held['ram']) == (new['vcpus'], FLAVOR['memory_mb'])
    statedb.finish_task(task, uuid, values=dict(new, flavor_name='odd'))
    revert = instances.start(uuid, 'revert_resize')
    statedb.finish_task(revert, uuid, values=dict(FLAVOR,
                                                  flavor_name='m1.small'))
    back = _usage(statedb)
    assert (back['cores'], back['ram']) == (FLAVOR['vcpus'],
                                            FLAVOR['memory_mb'])


def test_pending_counts_per_count_pending(statedb, ctx, instances):
    _limit(statedb, count_pending=False, instances=1)
    uuid = instances.in_state(vm.PENDING)
    assert _usage(statedb)['instances'] == 0
    other = instances.active()
    with pytest.raises(exception.QuotaExceeded):
        statedb.claim_task(ctx, uuid, 'rebuild')
    statedb.hard_delete(ctx, other)
    statedb.claim_task(ctx, uuid, 'rebuild')
    assert _usage(statedb)['instances'] == 1


def test_pending_counts_by_default(statedb, instances):
    _limit(statedb, instances=1)
    instances.in_state(vm.PENDING)
    assert _usage(statedb)['instances'] == 1


def test_quota_sets_override_defaults(statedb):
    _limit(statedb, instances=5)
    statedb.set_quotas('demo', {'cores': 7})
    limits = statedb.get_quotas('demo')['limits']
    assert (limits['instances'], limits['cores']) == (5, 7)
    assert statedb.get_quotas('other')['limits']['cores'] == quotas.UNLIMITED
    for bad in ({'cores': -2}, {'cores': 'many'}, {'gpus': 1}):
        with pytest.raises(exception.Invalid) as err:
            statedb.set_quotas('demo', bad)
        assert list(bad)[0] in err.value.message


# --- usage for billing ----------------------------------------------------------

def test_billable_hours_follow_the_states(statedb, ctx, clock, instances):
    start = clock()
    clock.advance(600)                   # before the build: not billed
    uuid = instances.active()
    ran = 2 * 3600
    clock.advance(ran)
    instances.run(uuid, 'stop')
    clock.advance(5 * 3600)              # stopped: not billed
    instances.run(uuid, 'start')
    clock.advance(1800)
    ran += 1800
    statedb.hard_delete(ctx, uuid)
    clock.advance(7200)                  # deleted: not billed
    usage = statedb.tenant_usage(start=start, end=clock())['demo']
    hours = ran / 3600
    assert usage['total_hours'] == pytest.approx(hours)
    assert usage['total_vcpus_usage'] == pytest.approx(hours * FLAVOR['vcpus'])
    assert usage['total_memory_mb_usage'] == pytest.approx(
        hours * FLAVOR['memory_mb'])
    assert usage['total_local_gb_usage'] == pytest.approx(
        hours * FLAVOR['disk_gb'])
    (server,) = usage['server_usages'].values()
    assert server['state'] == 'terminated'
    assert server['ended_at'] == statedb.get_instance(uuid)['hard_deleted_at']


def test_usage_window_clips_and_open_intervals_run_to_now(statedb, clock,
                                                          instances):
    instances.active()
    clock.advance(3600)
    window_start = clock()
    clock.advance(1800)
    usage = statedb.tenant_usage(start=window_start,
                                 end=clock.advance(0))['demo']
    assert usage['total_hours'] == pytest.approx(0.5)
    (server,) = usage['server_usages'].values()
    assert server['ended_at'] is None and server['state'] == vm.ACTIVE
