"""The conductor's lease RPC endpoint (namespace ``leases``): thin methods
over :class:`conductor.leases.flows.LeaseFlows`. Its target version must
match :data:`conductor.leases.rpcapi.VERSION` (a test checks)."""

from common import exception
from common import rpc
from conductor.leases import rpcapi

_expected = rpc.expected_exceptions(exception.TristateError)


class LeaseManager:
    target = rpc.Target(namespace=rpcapi.NAMESPACE, version=rpcapi.VERSION)

    def __init__(self, *, flows):
        self.flows = flows

    @_expected
    def create_lease(self, ctx, lease):
        return self.flows.create(ctx, lease)

    @_expected
    def list_leases(self, ctx, all_projects=False):
        return self.flows.list(ctx, all_projects=all_projects)

    @_expected
    def get_lease(self, ctx, lease_id):
        return self.flows.get(ctx, lease_id)

    @_expected
    def update_lease(self, ctx, lease_id, lease):
        return self.flows.update(ctx, lease_id, lease)

    @_expected
    def delete_lease(self, ctx, lease_id):
        return self.flows.delete(ctx, lease_id)

    @_expected
    def list_hosts(self, ctx):
        return self.flows.list_hosts(ctx)

    @_expected
    def set_host(self, ctx, host, reservable):
        return self.flows.set_host(ctx, host, reservable)
