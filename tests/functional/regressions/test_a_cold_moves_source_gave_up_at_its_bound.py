"""A cold migration's source gave up on the destination at its client's
bound, before the destination could answer.

Found by tests/functional/test_cold_migration_on_real_qemu.py on a loaded
machine (issue 25): the source's call ``migration_disk_sent`` (conductor
RPC 1.16) asks for ``[conductor] rpc_timeout`` plus a margin, as the
conductor gives the destination ``rpc_timeout`` to fetch and build; but
the agents' conductor client is *bounded* (it waits for the bus within
``rpc_timeout`` and sends with what is left of it), and the bounded path
dropped the call's own timeout, so the source gave up at ``rpc_timeout``
("No reply ... within 5 s") while the destination was still receiving:
the move failed though it would have succeeded. The live migration's
``migration_prepare_dest`` (1.18) was written the same way. Fixed: both
calls wait for the bus within the bound, then give the call its own
timeout.
"""

import types

from common import context
from conductor import rpcapi


class _Prepared:
    def __init__(self, kwargs):
        self.kwargs = kwargs

    def call(self, ctx, method, **kwargs):
        return {'method': method, 'timeout': self.kwargs.get('timeout')}


class _Client:
    version_cap = None

    def can_send_version(self, version):
        return True

    def prepare(self, **kwargs):
        return _Prepared(kwargs)


class _Bus:
    def client(self, *args, **kwargs):
        return _Client()

    def connector(self, topic):
        return types.SimpleNamespace(wait=lambda timeout: timeout)


def test_the_long_calls_keep_their_own_timeout_on_a_bounded_client():
    conf = types.SimpleNamespace(
        conductor=types.SimpleNamespace(topic='conductor'),
        upgrade_levels=types.SimpleNamespace(conductor=None))
    api = rpcapi.ConductorAPI(_Bus(), conf, timeout=5, bounded=True)
    ctx = context.get_admin_context()

    sent = api.migration_disk_sent(ctx, host='h1', instance_uuid='u',
                                   disk={}, timeout=35)
    prepared = api.migration_prepare_dest(ctx, host='h1', instance_uuid='u',
                                          timeout=35)

    assert (sent['method'], sent['timeout']) == ('migration_disk_sent', 35)
    assert (prepared['method'], prepared['timeout']) == (
        'migration_prepare_dest', 35)
