"""Server groups under real concurrency (issue 25): 50 builds at once
(``TRISTATE_FAULTS_FULL=1``, ``tox -e faults``; 12 in the default suite),
sent through the bus to two conductor processes that place them on one
PostgreSQL database, half in an anti-affinity group, half in an
anti-affinity group of ``max_server_per_host`` 3. Each group's row lock
(common/db/server_groups.py) serialises its own placements only: the first
group ends with one member on each of the two hosts, the second with three
on each, every other build buried with a reason naming its group, and
``tristate-manage check`` finds nothing wrong (its server group check
included).
"""

import collections
import concurrent.futures
import os

import pytest

from common.states import vm

BUILDS = 50 if os.environ.get('TRISTATE_FAULTS_FULL') == '1' else 12


@pytest.mark.postgresql
def test_concurrent_builds_of_a_group_never_break_its_policy(make_plane):
    plane = make_plane(conductors=2, postgresql=True,
                       fake_driver={'vcpus': 256, 'memory_mb': 262144})
    # buried builds stay members (as Nova): no limit on members here
    plane.statedb.set_quotas('demo', {'server_group_members': -1})
    groups = [plane.statedb.create_server_group(
        name='g%s' % most, policy='anti-affinity', project_id='demo',
        user_id='alice', max_server_per_host=most)['uuid']
        for most in (None, 3)]
    plane.api.client = plane.api.client.prepare(timeout=120)

    def build(n):
        return plane.api.create_instance(
            plane.ctx, name='b%d' % n, flavor='tiny', image_ref='cirros',
            attributes={'server_group': groups[n % 2]})['uuid']
    with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
        uuids = list(pool.map(build, range(BUILDS)))
    ended = [plane.wait_idle(u, timeout=120) for u in uuids]

    placed = collections.defaultdict(collections.Counter)
    for n, inst in enumerate(ended):
        if inst['vm_state'] == vm.ACTIVE:
            placed[n % 2][inst['host']] += 1
        else:
            assert inst['vm_state'] == vm.ERROR, inst
            reason = plane.statedb.list_actions(inst['uuid'])[-1]['message']
            assert groups[n % 2] in reason, reason
    assert placed[0] == {'h1': 1, 'h2': 1}
    assert placed[1] == {'h1': 3, 'h2': 3}
    assert plane.violations() == []
