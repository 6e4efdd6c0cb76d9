"""A conductor whose metrics port was taken started consuming, then died
with a traceback.

Found running several conductors on one machine (issue 26, many
processes): the second ``tristate-conductor`` with the shipped
``[metrics] port`` (9180) exited with ``OSError: [Errno 98] Address
already in use`` and a traceback that named no option, and only after its
RPC server had started ("Conductor ... started" came first in its log), so
it could take messages off the conductors' queue and die with them. Fixed:
the daemons (conductor and agent) open their metrics endpoint before they
start anything, and a port that cannot be had stops them with one line
naming ``[metrics] host`` and ``port`` and what to do (each process on a
machine its own port, 0 for a free one). The mains run here in this
process with their services replaced by recorders.
"""

import socket
import types

import pytest
from oslo_config import cfg

from common import conf as tconf
from common import rpc
from common import service
from compute_agent.cmd import agent as agent_cmd
from conductor.cmd import conductor as conductor_cmd


class Recorder:
    """A service that only notes that it was started."""

    started = []

    def __init__(self, conf, *args):
        self.host = 'second'
        self.driver = types.SimpleNamespace(name='fake')

    def start(self, **kwargs):
        self.started.append(self.host)


@pytest.fixture
def taken():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize('main, module, name', [
    (conductor_cmd.main, conductor_cmd.conductor_service, 'ConductorService'),
    (agent_cmd.main, agent_cmd.agent_service, 'AgentService')])
def test_a_taken_metrics_port_is_named_before_anything_starts(
        monkeypatch, taken, main, module, name):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate')
    conf.set_override('host', '127.0.0.1', group='metrics')
    conf.set_override('port', taken, group='metrics')
    conf.set_override('enabled', True, group='metrics')
    monkeypatch.setattr(service, 'prepare', lambda *a, **k: conf)
    monkeypatch.setattr(rpc, 'Bus', lambda *a, **k: None)
    monkeypatch.setattr(module, name, Recorder)
    if hasattr(module, 'make_statedb'):
        monkeypatch.setattr(module, 'make_statedb', lambda conf: None)
    Recorder.started = []
    with pytest.raises(SystemExit) as stopped:
        main([])
    assert ('cannot serve metrics on 127.0.0.1:%d ([metrics] host, port): '
            'Address already in use; nothing was started' % taken) in str(
                stopped.value)
    assert Recorder.started == []
