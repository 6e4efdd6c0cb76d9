"""A guest that shuts itself down could not be deleted by its policy.

Seed 000 maps a guest's own shutdown to STOPPED *or DELETED*, depending on
the instance's ``shutdown_terminate``; found missing when issue 19 (item 8)
checked the reconcile table against the seeds: the ``user_shutdown``
policy knew only ``stop`` and ``restart``, so a create asking for
``delete`` was refused.

Fixed: ``user_shutdown = delete`` is a policy value of the reconcile
table's "the guest shut itself down" row: reconcile hard-deletes the
instance through the delete's own transaction (the same as a user's DELETE:
allocation, quota and billing freed at once, the action log says why) and
has the domain destroyed.
"""

from common.states import vm
from tests.functional.conftest import active
from tests.functional.conftest import allocated
from tests.functional.conftest import last_log
from tests.functional.conftest import outside
from tests.functional.conftest import used
from tests.functional.conftest import wait_domain
from tests.functional.conftest import wait_instance


def test_a_guest_that_shuts_down_is_deleted_when_its_policy_says_so(
        plane, ctx):
    inst = active(plane, ctx, policies={'user_shutdown': 'delete'})
    uuid, host = inst['uuid'], inst['host']
    assert inst['user_shutdown_policy'] == 'delete'
    assert plane.statedb.get_quotas(ctx.project_id)['usage']['instances'] == 1

    outside(plane, 'guest-shutdown', uuid)

    wait_instance(plane, uuid, lambda i: i['vm_state'] == vm.HARD_DELETED,
                  what='the instance to be deleted by its policy')
    entry = last_log(plane, uuid)
    assert (entry['action'], entry['vm_state_before']) == ('delete', vm.ACTIVE)
    assert entry['message'] == ('the guest shut itself down; user_shutdown '
                                'policy delete')
    assert plane.statedb.list_allocations(instance_uuid=uuid) == []
    assert used(plane, host) == allocated(plane, host) == (0, 0, 0)
    usage = plane.statedb.get_quotas(ctx.project_id)['usage']
    assert (usage['instances'], usage['cores'], usage['ram']) == (0, 0, 0)
    wait_domain(plane, host, uuid, lambda rec: rec is None,
                what='the domain to be destroyed')


def test_a_guest_that_shuts_down_under_policy_stop_is_kept(plane, ctx):
    inst = active(plane, ctx, policies={'user_shutdown': 'stop'})
    outside(plane, 'guest-shutdown', inst['uuid'])
    wait_instance(plane, inst['uuid'], lambda i: i['vm_state'] == vm.STOPPED,
                  what='the instance to be stopped by its policy')
