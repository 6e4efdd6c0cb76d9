"""``tristate-compute-agent``: one per hypervisor host, no database access.

    tristate-compute-agent --config-file /etc/tristate/tristate.conf
"""

from common import rpc
from common import service
from compute_agent import service as agent_service


def main(argv=None):
    conf = service.prepare(argv, description='Tristate compute agent')
    bus = rpc.Bus(conf)
    agent = agent_service.AgentService(conf, bus)
    agent.start()
    try:
        service.wait_for_signal()
    finally:
        agent.stop()
        bus.cleanup()
    return 0
