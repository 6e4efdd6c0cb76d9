"""With RabbitMQ unreachable, asking an agent to destroy a domain never
returned.

``destroy_domain`` is best effort (the agent's next power report asks
again), yet it was a cast with oslo.messaging's default ``retry``: publish
until the broker comes back. A hard delete through the conductor, its
reclaim of soft-deleted instances and a delete's "tell the destination"
(issue 19) all ask it, so with the bus down the conductor's periodic jobs
stopped and the delete RPC held its worker. Found by reading the compute
client while reviewing issue 19's work.

Fixed: the cast retries once (:data:`compute_agent.rpcapi.BEST_EFFORT_RETRY`)
and then fails, which :meth:`conductor.flows.Flows.request_destroy` logs.
"""

import threading
import time

from common import context
from common import rpc
from compute_agent import rpcapi
from tests import support


def test_a_destroy_request_with_the_bus_down_returns(conf):
    bus = rpc.Bus(conf, url='rabbit://guest:guest@127.0.0.1:%d/'
                  % support.free_port())
    conf.set_override('rabbit_retry_interval', 1,
                      group='oslo_messaging_rabbit')
    compute = rpcapi.ComputeAPI(bus, conf)
    outcome = []

    def ask():
        try:
            compute.destroy_domain(context.get_admin_context(), host='h1',
                                   instance_uuid='0' * 32)
            outcome.append('sent')
        except Exception as err:     # noqa: BLE001 (any failure is an answer)
            outcome.append(type(err).__name__)

    started = time.monotonic()
    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(30)
    assert outcome, ('destroy_domain still publishing after %.0f s with the '
                     'broker down' % (time.monotonic() - started))
    assert outcome != ['sent']
    closing = threading.Thread(target=bus.cleanup, daemon=True)
    closing.start()
    closing.join(15)
