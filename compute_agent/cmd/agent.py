"""``tristate-compute-agent``: one per hypervisor host, no database access.

    tristate-compute-agent --config-file /etc/tristate/tristate.conf
"""

import subprocess

from common import metrics
from common import rpc
from common import sdnotify
from common import service
from compute_agent import service as agent_service


def _machine_stopping():
    """True when systemd is shutting the machine down (the unit is ordered
    Before=libvirt-guests.service, so this runs before guests are stopped)."""
    try:
        out = subprocess.run(['systemctl', 'is-system-running'],
                             capture_output=True, text=True, timeout=5,
                             check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return False
    return out == 'stopping'


def main(argv=None):
    conf = service.prepare(argv, description='Tristate compute agent',
                           requires=('libvirt',))
    bus = rpc.Bus(conf)
    agent = agent_service.AgentService(conf, bus)
    what = 'compute agent %s (%s driver)' % (agent.host, agent.driver.name)
    # Ready while the bus is still being connected: the agent's state is
    # its journal and its hypervisor; it reports once the bus is back.
    # First: a port it cannot have stops it before it takes any task.
    metrics_server = metrics.serve(conf, default=False)
    agent.start(wait_for_bus=False, on_bus=lambda: sdnotify.status(
        '%s; message bus connected' % what))
    sdnotify.ready('%s; message bus %s' % (
        what, 'connected' if agent.starter.started else 'connecting'))
    try:
        service.wait_for_signal(conf, 'tristate-compute-agent')
        if _machine_stopping():
            agent.host_shutting_down()
    finally:
        sdnotify.stopping()
        if metrics_server is not None:
            metrics_server.shutdown()
        agent.stop()
        bus.cleanup()
    return 0
