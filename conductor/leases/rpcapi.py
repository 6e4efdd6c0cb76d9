"""Client side of the conductor's lease RPC API (the ``leases`` namespace on
the conductor's topic), for the API tier.

Wrap a :class:`conductor.rpcapi.ConductorAPI`: its RPC client, topic,
timeout and version cap are used. The lease namespace came with conductor
RPC API 1.1, so while ``[upgrade_levels] conductor`` caps the conductors at
1.0 (some may not know leases yet) every call here is refused at once with
a clear error instead of reaching a conductor that cannot answer it.

Version history:

* 1.0 - Initial version: create_lease, list_leases, get_lease, update_lease,
  delete_lease.
* 1.1 - list_hosts, set_host: the reservable pool (admin only).
"""

from common import exception

NAMESPACE = 'leases'
VERSION = '1.1'
NEEDS_CONDUCTOR_VERSION = '1.1'


class LeaseAPI:
    def __init__(self, conductor_api):
        self.conductor_api = conductor_api
        self.client = conductor_api.client

    def _call(self, ctx, method, version='1.0', **kwargs):
        if not self.client.can_send_version(NEEDS_CONDUCTOR_VERSION):
            raise exception.ServiceUnavailable(
                reason='leases need conductor RPC API %s and [upgrade_levels] '
                       'conductor caps it at %s; remove the cap once every '
                       'conductor is upgraded' % (NEEDS_CONDUCTOR_VERSION,
                                                  self.client.version_cap))
        try:
            # Bounded as the conductor client is (a 503 within the API's
            # rpc_timeout when the bus is down).
            return self.conductor_api.prepare(
                namespace=NAMESPACE, version=version).call(ctx, method,
                                                           **kwargs)
        except exception.TristateError as err:
            # The server's traceback rides in str(err): keep the message.
            raise exception.from_dict(err.to_dict()) from None

    def create_lease(self, ctx, lease):
        """``lease``: the Blazar-like body (name, start_date, end_date,
        reservations, optional before_end_date and on_end)."""
        return self._call(ctx, 'create_lease', lease=lease)

    def list_leases(self, ctx, *, all_projects=False):
        return self._call(ctx, 'list_leases', all_projects=all_projects)

    def get_lease(self, ctx, lease_id):
        return self._call(ctx, 'get_lease', lease_id=lease_id)

    def update_lease(self, ctx, lease_id, lease):
        """``lease``: name, start_date, end_date, prolong_for, reduce_by,
        before_end_date, on_end (any of them)."""
        return self._call(ctx, 'update_lease', lease_id=lease_id, lease=lease)

    def delete_lease(self, ctx, lease_id):
        return self._call(ctx, 'delete_lease', lease_id=lease_id)

    def list_hosts(self, ctx):
        """The reservable pool (admin only)."""
        return self._call(ctx, 'list_hosts', version='1.1')

    def set_host(self, ctx, host, reservable):
        """Put ``host`` into the reservable pool or take it out (admin
        only)."""
        return self._call(ctx, 'set_host', version='1.1', host=host,
                          reservable=reservable)
