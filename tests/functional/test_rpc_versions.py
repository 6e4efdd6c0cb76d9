"""The RPC APIs' versions: client and server agree, and a client capped at
an older version (``[upgrade_levels]``, for rolling upgrades) still works."""

from common.states import vm
from compute_agent import manager as agent_manager
from compute_agent import rpcapi as agent_rpcapi
from conductor import manager as conductor_manager
from conductor import rpcapi as conductor_rpcapi
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_idle


def test_client_and_server_versions_agree():
    assert conductor_rpcapi.VERSION == (
        conductor_manager.ConductorManager.target.version)
    assert agent_rpcapi.VERSION == agent_manager.AgentManager.target.version


def test_clients_capped_at_1_0_still_work(conf, make_plane, ctx):
    set_opts(conf, 'upgrade_levels', conductor='1.0', compute='1.0')
    plane = make_plane(hosts=1)
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)

    inst = capped.create_instance(ctx, name='vm', flavor='tiny',
                                  image_ref='cirros')
    assert wait_idle(plane, inst['uuid'])['vm_state'] == vm.ACTIVE
    capped.run_action(ctx, inst['uuid'], 'stop')
    assert wait_idle(plane, inst['uuid'])['vm_state'] == vm.STOPPED
    assert capped.get_instance(ctx, inst['uuid'])['vm_state'] == vm.STOPPED
    # without database access, delete is one call to a conductor
    assert capped.delete_instance(ctx, inst['uuid'])['vm_state'] == (
        vm.HARD_DELETED)
