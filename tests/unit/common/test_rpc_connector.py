"""The bounded side of the bus (issue 20, item 12): a call never waits for
the broker longer than its timeout (:class:`common.rpc.Connector`), and an
RPC server that cannot connect does not hold its daemon's start or stop
(:class:`common.rpc.BackgroundStart`). Fakes stand in for oslo.messaging's
client and server: the broker's absence is a call that blocks."""

import threading

import pytest

from common import rpc


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class BlockingClient:
    """oslo.messaging's client as the rabbit driver makes it behave with the
    broker down: the first call blocks (making the reply queue) until the
    broker is back."""

    def __init__(self):
        self.broker_up = threading.Event()
        self.prepared = []
        self.casts = []

    def prepare(self, **kwargs):
        self.prepared.append(kwargs)
        return self

    def call(self, ctx, method, **kwargs):
        self.broker_up.wait()
        raise rpc.MessagingTimeout('nobody serves %s' % method)

    def cast(self, ctx, method, **kwargs):
        if not self.broker_up.is_set():
            raise rpc.MessagingException('connection refused')
        self.casts.append(method)


@pytest.fixture
def broker():
    client = BlockingClient()
    yield client
    client.broker_up.set()      # let the connector's thread end


def test_a_call_waits_at_most_its_timeout_then_fails_at_once(broker):
    clock = Clock()
    connector = rpc.Connector(broker, 'rabbit://u@h:5672/', clock=clock)
    # The probe goes to a server nobody runs, with no retry.
    assert broker.prepared[0]['server'] == rpc.PROBE_SERVER
    assert broker.prepared[0]['retry'] == 0
    with pytest.raises(rpc.BusUnreachable, match='rabbit://u@h:5672/'):
        connector.wait(0.05)
    clock.now += 10             # trying for longer than a call's timeout
    unreachable = threading.Event()

    def call():
        with pytest.raises(rpc.BusUnreachable, match='for 10 s'):
            connector.wait(5)       # fails without waiting 5 s
        unreachable.set()
    threading.Thread(target=call, daemon=True).start()
    assert unreachable.wait(2)
    assert 'no connection' in connector.problem()


def test_once_connected_a_call_gets_what_is_left_of_its_timeout(broker):
    clock = Clock()
    connector = rpc.Connector(broker, 'rabbit://u@h:5672/', clock=clock)
    broker.broker_up.set()
    assert connector.wait(30) == pytest.approx(30)
    assert connector.connected
    assert connector.problem() is None
    assert broker.casts == ['bus_probe']


class Server:
    def __init__(self):
        self.connect = threading.Event()
        self.calls = []

    def start(self):
        self.connect.wait()
        self.calls.append('start')

    def stop(self):
        self.calls.append('stop')

    def wait(self):
        self.calls.append('wait')


def test_a_server_that_cannot_connect_holds_neither_start_nor_stop():
    server = Server()
    started = []
    starter = rpc.BackgroundStart(server, 'Conductor c1',
                                  on_started=lambda: started.append(1))
    starter.start()             # returns although start() blocks
    assert not starter.started
    starter.stop()              # nothing to stop: does not wait either
    assert server.calls == []
    server.connect.set()
    assert starter.wait(10) and started == [1]
    starter.stop()
    assert server.calls == ['start', 'stop', 'wait']


def test_a_server_started_in_the_foreground_is_started_on_return():
    server = Server()
    server.connect.set()
    starter = rpc.BackgroundStart(server, 'agent').start(background=False)
    assert starter.started and server.calls == ['start']
