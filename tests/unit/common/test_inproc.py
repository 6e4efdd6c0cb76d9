"""The in-process bus (common/inproc.py) through oslo.messaging's own
clients, servers and notifiers: what the embedded plane relies on."""

import threading
import uuid as uuidlib

import pytest
from oslo_config import cfg

from common import context
from common import exception
from common import rpc

@pytest.fixture
def bus():
    conf = cfg.ConfigOpts()
    rpc.register_opts(conf)
    conf([])
    # An exchange of its own: the bus is the process's, shared with every
    # other test (whose notifications would land in the same queues).
    conf.set_override('control_exchange', 'test-%s' % uuidlib.uuid4().hex)
    bus = rpc.Bus(conf, url='inproc://')
    yield bus
    bus.cleanup()


@pytest.fixture
def topic():
    return 'inproc-%s' % uuidlib.uuid4().hex


@pytest.fixture
def servers():
    started = []

    def start(server):
        server.start()
        started.append(server)
        return server
    yield start
    for server in started:
        server.stop()
        server.wait()


class Endpoint:
    target = rpc.Target(version='1.0')

    def __init__(self, name='one'):
        self.name = name
        self.seen = []
        self.lock = threading.Lock()

    def echo(self, ctx, value):
        with self.lock:
            self.seen.append(value)
        return {'by': self.name, 'value': value, 'task_id': ctx.task_id}

    def fail(self, ctx):
        raise exception.InstanceNotFound(instance='abc')

    def note(self, ctx, value):
        with self.lock:
            self.seen.append(value)


CTX = context.get_admin_context(task_id='t-1')


def test_a_call_returns_the_answer_and_the_context_travels(bus, topic,
                                                           servers):
    servers(bus.server(topic, [Endpoint()], server='s1'))
    client = bus.client(topic, '1.0', timeout=5)
    assert client.call(CTX, 'echo', value=[1, 'x']) == {
        'by': 'one', 'value': [1, 'x'], 'task_id': 't-1'}


def test_an_exception_comes_back_with_its_class(bus, topic, servers):
    servers(bus.server(topic, [Endpoint()], server='s1'))
    with pytest.raises(exception.InstanceNotFound) as err:
        bus.client(topic, '1.0', timeout=5).call(CTX, 'fail')
    assert err.value.kwargs == {'instance': 'abc'}


def test_a_call_no_one_answers_times_out(bus, topic):
    with pytest.raises(rpc.MessagingTimeout):
        bus.client(topic, '1.0', timeout=0.2).prepare(server='nobody').call(
            CTX, 'echo', value=1)


def test_what_cannot_cross_a_real_bus_cannot_cross_this_one(bus, topic):
    with pytest.raises((TypeError, ValueError)):
        bus.client(topic, '1.0').prepare(server='s1').cast(
            CTX, 'note', value=object())


def test_messages_wait_for_a_server_started_later(bus, topic, servers):
    client = bus.client(topic, '1.0', timeout=5).prepare(server='late')
    for value in range(3):
        client.cast(CTX, 'note', value=value)
    endpoint = Endpoint()
    servers(bus.server(topic, [endpoint], server='late'))
    assert client.call(CTX, 'echo', value='last')['value'] == 'last'
    assert endpoint.seen == [0, 1, 2, 'last']


def test_a_stopped_server_leaves_its_queue_for_the_next(bus, topic, servers):
    first = Endpoint('first')
    server = servers(bus.server(topic, [first], server='s1'))
    server.stop()
    server.wait()
    client = bus.client(topic, '1.0', timeout=5).prepare(server='s1')
    client.cast(CTX, 'note', value='queued')
    second = Endpoint('second')
    servers(bus.server(topic, [second], server='s1'))
    assert client.call(CTX, 'echo', value='after')['by'] == 'second'
    assert first.seen == [] and second.seen == ['queued', 'after']


def test_servers_of_one_topic_share_its_messages(bus, topic, servers):
    endpoints = [Endpoint('a'), Endpoint('b')]
    for name, endpoint in zip('ab', endpoints, strict=True):
        servers(bus.server(topic, [endpoint], server=name))
    client = bus.client(topic, '1.0', timeout=5)
    answers = [client.call(CTX, 'echo', value=i) for i in range(40)]
    assert sorted(a['value'] for a in answers) == list(range(40))
    assert sorted(endpoints[0].seen + endpoints[1].seen) == list(range(40))


def test_fanout_reaches_every_server(bus, topic, servers):
    endpoints = [Endpoint('a'), Endpoint('b')]
    for name, endpoint in zip('ab', endpoints, strict=True):
        servers(bus.server(topic, [endpoint], server=name))
    bus.client(topic, '1.0', fanout=True).cast(CTX, 'note', value='all')
    _wait(lambda: [e.seen for e in endpoints] == [['all'], ['all']])


class Collector:
    def __init__(self):
        self.events = []
        self.got = threading.Event()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.events.append((event_type, payload['tristate_object.data']))
        self.got.set()


def test_notifications_reach_every_pool_and_wait_for_listeners(bus):
    conf = bus.conf
    conf.set_override('driver', ['messagingv2'],
                      group='oslo_messaging_notifications')
    notifier = bus.notifier('test')
    notifier.info(CTX, 'early.event', 'Payload', {'n': 0})   # no one listens
    collectors = {pool: Collector() for pool in ('p1', 'p2')}
    listeners = [bus.notification_listener([c], pool=pool)
                 for pool, c in collectors.items()]
    plain = Collector()
    listeners.append(bus.notification_listener([plain]))
    for listener in listeners:
        listener.start()
    try:
        notifier.info(CTX, 'late.event', 'Payload', {'n': 1})
        for collector in (*collectors.values(), plain):
            assert collector.got.wait(5)
        for collector in collectors.values():
            _wait(lambda c=collector: ('late.event', {'n': 1}) in c.events)
        # the queue without a pool kept what was sent before it listened
        _wait(lambda: plain.events[:2] == [('early.event', {'n': 0}),
                                           ('late.event', {'n': 1})])
    finally:
        for listener in listeners:
            listener.stop()
            listener.wait()


def _wait(predicate, timeout=5.0):
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        done.wait(0.01)
    assert predicate()


def test_notifications_no_one_takes_are_bounded(bus, monkeypatch):
    from common import inproc
    monkeypatch.setattr(inproc, 'NOTIFICATIONS_KEPT', 3)
    bus.conf.set_override('driver', ['messagingv2'],
                          group='oslo_messaging_notifications')
    notifier = bus.notifier('test')
    for n in range(10):
        notifier.info(CTX, 'event.%d' % n, 'Payload', {'n': n})
    collector = Collector()
    listener = bus.notification_listener([collector])
    listener.start()
    try:
        _wait(lambda: len(collector.events) == 3)
        assert [e for e, _data in collector.events] == [
            'event.7', 'event.8', 'event.9']
    finally:
        listener.stop()
        listener.wait()


def test_a_server_takes_messages_without_a_polling_thread(bus, topic,
                                                          servers):
    """The sender's thread hands a message to the server's executor: no
    thread polls the queue in between (a hand-over less per message)."""
    before = {t.name for t in threading.enumerate()}
    server = servers(bus.server(topic, [Endpoint()], server='s1'))
    assert {t.name for t in threading.enumerate()} == before
    client = bus.client(topic, '1.0', timeout=5).prepare(server='s1')
    assert client.call(CTX, 'echo', value=1)['value'] == 1
    seen = {}

    def callback(incoming):         # what the executor is given, and where
        seen['thread'] = threading.current_thread()
        seen['methods'] = [m.message['method'] for m in incoming]
        raise RuntimeError('the executor is gone')
    server.listener.callback = callback
    client.cast(CTX, 'note', value=2)
    assert seen == {'thread': threading.current_thread(),
                    'methods': ['note']}
    # a hand-over that failed leaves the message for the next server
    server.stop()
    server.wait()
    endpoint = Endpoint('next')
    servers(bus.server(topic, [endpoint], server='s1'))
    _wait(lambda: endpoint.seen == [2])
