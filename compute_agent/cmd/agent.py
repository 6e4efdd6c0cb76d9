"""``tristate-compute-agent``: one per hypervisor host, no database access.

    tristate-compute-agent --config-file /etc/tristate/tristate.conf
"""

from common import rpc
from common import sdnotify
from common import service
from compute_agent import service as agent_service


def main(argv=None):
    conf = service.prepare(argv, description='Tristate compute agent')
    bus = rpc.Bus(conf)
    agent = agent_service.AgentService(conf, bus)
    agent.start()
    sdnotify.ready('compute agent %s (%s driver)' % (agent.host,
                                                    agent.driver.name))
    try:
        service.wait_for_signal()
    finally:
        sdnotify.stopping()
        agent.stop()
        bus.cleanup()
    return 0
