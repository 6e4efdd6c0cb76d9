"""Builds lost with their agent left running domains that no host counted.

Found trying the embedded plane as an adversarial client would (issue 19,
item 2b): ``tristate-all`` killed with SIGKILL in the middle of a burst of
builds and started again ended 5-13 instances ERROR (their builds lost)
with RUNNING domains and no allocation: the lost build was failed and its
allocation freed before any report had shown the domain, and reconcile
never looked at ERROR instances again.

Fixed (whatever runs on a host is counted on that host): a build that
vanishes keeps its allocation if its domain had been reported, and an
ERROR instance whose domain its host reports regains its allocation there.
Here the agent dies after spawning the domain and before reporting
anything: its next run reports the build lost, then the domain.
"""

import os

from common.db import checks
from common.flavors import Flavor
from common.states import power
from common.states import vm
from compute_agent import journal
from compute_agent.virt import fake
from tests.functional.conftest import allocated
from tests.functional.conftest import last_log
from tests.functional.conftest import used
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_instance

TINY = (1, 512, 1)


def test_an_error_instance_whose_domain_runs_is_counted_on_its_host(
        make_plane, ctx):
    plane = make_plane(hosts=1)
    plane.stop_agent('host1')
    # What the dead agent's run got to: the conductor scheduled the build
    # (allocated on host1), the agent noted the task and spawned the domain.
    inst = plane.statedb.create_instance(ctx, {
        'name': 'vm', 'project_id': ctx.project_id, 'user_id': ctx.user_id,
        'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1,
        'image_ref': 'cirros'})
    uuid, task = inst['uuid'], ctx.for_task(inst['task_id'])
    plane.statedb.allocate(task, uuid, 'host1', vcpus=1, memory_mb=512,
                           disk_gb=1)
    journal.TaskJournal(os.path.join(
        plane.conf.state_dir, 'agent', 'host1-tasks.json')).add(
        task.task_id, uuid, 'build')
    driver = fake.FakeDriver(state_dir=plane.conf.state_dir)
    driver.init_host('host1')
    driver.spawn(uuid, name='vm', flavor=Flavor('tiny', 1, 512, 1),
                 image_ref='cirros')

    plane.start_agent('host1')

    after = wait_instance(plane, uuid, lambda i: (
        i['vm_state'], i['power_state']) == (vm.ERROR, power.RUNNING),
        what='the lost build to fail and its domain to be reported')
    assert 'restarted and lost the task' in last_log(plane, uuid)['message']
    assert after['host'] == 'host1'
    # counted once reconcile looked at what the report stored
    wait_for(lambda: plane.statedb.list_allocations(instance_uuid=uuid),
             what='the ERROR instance to be counted on host1')
    assert [a['host'] for a in plane.statedb.list_allocations(
        instance_uuid=uuid)] == ['host1']
    assert used(plane, 'host1') == allocated(plane, 'host1') == TINY
    found, _seen = checks.find_violations(plane.statedb.db, checks.Limits())
    assert found == []
