"""RabbitMQ over TLS with one user per service, as docs/operator-guide.md
("RabbitMQ with TLS and per-service users") sets it up.

tools/test-services.sh gives its node an AMQPS listener (a throwaway CA)
and the users tristate-conductor, tristate-compute and tristate-api with
the permissions the guide recommends. Here a conductor and two agents run
as their own processes on that listener, each with its own user, and this
process is the API tier with the API's user. A build works end to end;
what the agents' user must not do, RabbitMQ refuses; a daemon that does
not trust the broker's certificate, or speaks plain AMQP to the TLS port,
says so in its log instead of connecting.
"""

import os
import ssl
import urllib.parse

import amqp
import pytest

from common.db import engine
from common.db import migration
from common.states import power
from common.states import vm
from tests import support

from .conftest import HOSTS
from .conftest import Plane

pytestmark = pytest.mark.rabbitmq

ENV = {'url': 'TRISTATE_TEST_RABBIT_TLS_URL',
       'ca': 'TRISTATE_TEST_RABBIT_TLS_CA',
       'cert': 'TRISTATE_TEST_RABBIT_TLS_CLIENT_CERT',
       'key': 'TRISTATE_TEST_RABBIT_TLS_CLIENT_KEY',
       'conductor': 'TRISTATE_TEST_RABBIT_TLS_CONDUCTOR_URL',
       'agent': 'TRISTATE_TEST_RABBIT_TLS_COMPUTE_URL',
       'api': 'TRISTATE_TEST_RABBIT_TLS_API_URL'}
# The exchange the users' topic permissions are set on (the default).
EXCHANGE = 'tristate'


@pytest.fixture(scope='session')
def tls():
    missing = [name for name in ENV.values() if not os.environ.get(name)]
    if missing:
        reason = ('%s not set: the RabbitMQ TLS tests need the node of '
                  '`tools/test-services.sh start DIR`' % ', '.join(missing))
        if os.environ.get('CI') == 'true':
            pytest.fail('CI needs RabbitMQ with TLS: ' + reason,
                        pytrace=False)
        pytest.skip(reason)
    return {key: os.environ[name] for key, name in ENV.items()}


def _amqp(url, ca):
    """A bare AMQP connection over TLS that waits for each publish to be
    confirmed, so a refused one raises here."""
    parts = urllib.parse.urlsplit(url)
    conn = amqp.Connection(
        host='%s:%d' % (parts.hostname, parts.port), userid=parts.username,
        password=parts.password, connect_timeout=10, confirm_publish=True,
        ssl={'ca_certs': ca, 'cert_reqs': ssl.CERT_REQUIRED,
             'server_hostname': parts.hostname})
    conn.connect()
    return conn


def _refused(conn, action):
    """The message of the AccessRefused ``action(channel)`` raises."""
    channel = conn.channel()
    with pytest.raises(amqp.exceptions.AccessRefused) as refused:
        action(channel)
    return str(refused.value)


def _wait_in_log(plane, name, words, timeout=30):
    def found():
        try:
            text = plane.path.joinpath('%s.log' % name).read_text()
        except FileNotFoundError:
            return None
        return [line for line in text.splitlines() if words in line]
    return plane.wait_for(found, timeout, '%r in the log of %s'
                          % (words, name))


def test_build_over_tls_with_a_user_per_service(make_plane, tls):
    plane = make_plane(
        urls={kind: tls[kind] for kind in ('conductor', 'agent', 'api')},
        rabbit={'ssl': 'true', 'ssl_ca_file': tls['ca'],
                'ssl_cert_file': tls['cert'], 'ssl_key_file': tls['key']},
        exchange=EXCHANGE)
    # The agents got no database credentials, and need none.
    for host in HOSTS:
        text = plane.own_conf[host].read_text() + plane.common_conf.read_text()
        assert '[database]' not in text
    inst = plane.build('tls-1')
    assert (inst['vm_state'], inst['power_state']) == (vm.ACTIVE,
                                                       power.RUNNING), inst
    assert plane.domain(inst)['power_state'] == power.RUNNING
    stopped = plane.act(inst['uuid'], 'stop')
    assert stopped['vm_state'] == vm.STOPPED

    conductor_topic = 'tristate-conductor-%s' % plane.tag
    other_agent = 'tristate-compute-%s.%s' % (plane.tag, HOSTS[1])
    agent = _amqp(tls['agent'], tls['ca'])
    try:
        # It cannot take the conductors' messages off their queue...
        assert "access to queue '%s'" % conductor_topic in _refused(
            agent, lambda ch: ch.basic_get(conductor_topic))
        # ... nor copy them into a queue of its own...
        assert "access to topic '%s'" % conductor_topic in _refused(
            agent, lambda ch: (
                ch.queue_declare('tristate-compute-%s.spy' % plane.tag,
                                 auto_delete=True),
                ch.queue_bind('tristate-compute-%s.spy' % plane.tag,
                              EXCHANGE, routing_key=conductor_topic)))
        # ... nor send a task to another agent.
        assert "access to topic '%s'" % other_agent in _refused(
            agent, lambda ch: ch.basic_publish(
                amqp.Message('{}'), exchange=EXCHANGE,
                routing_key=other_agent))
        # What the permissions cannot confine (docs/operator-guide.md): the
        # default exchange, which agents need for their answers, delivers
        # to any queue by name, even one the agent may not touch otherwise.
        probe = 'tristate-conductor-%s-probe' % plane.tag
        admin = _amqp(tls['url'], tls['ca'])
        try:
            admin.channel().queue_declare(probe, auto_delete=False)
            agent.channel().basic_publish(amqp.Message('sneaked'),
                                          exchange='', routing_key=probe)
            got = admin.channel().basic_get(probe, no_ack=True)
            assert got is not None and got.body == 'sneaked'
        finally:
            admin.channel().queue_delete(probe)
            admin.collect()
    finally:
        agent.collect()
    # The conductor still answers: nothing above reached it.
    assert plane.instance(inst['uuid'])['vm_state'] == vm.STOPPED
    assert plane.act(inst['uuid'], 'start')['vm_state'] == vm.ACTIVE
    # Every daemon had the permissions it needed, notifications included
    # (a refused one would only be logged).
    for name in ['conductor', *HOSTS]:
        log = plane.path.joinpath('%s.log' % name).read_text()
        assert 'ACCESS_REFUSED' not in log, name
        assert 'Could not send notification' not in log, name


def _other_ca(tmp_path):
    cert, _key = support.self_signed(tmp_path, name='not-the-broker-ca',
                                     cert='other-ca.pem', key='other-ca.key')
    return cert


@pytest.mark.parametrize('settings, words, bus', [
    ('other CA', 'CERTIFICATE_VERIFY_FAILED', 'TLS (CA {ca})'),
    ('plain AMQP', 'Connection reset by peer', 'plain AMQP'),
])
def test_a_conductor_that_cannot_speak_tls_to_the_broker_says_why(
        tmp_path, tls, settings, words, bus):
    ca = _other_ca(tmp_path)
    rabbit = ({'ssl': 'true', 'ssl_ca_file': ca}
              if settings == 'other CA' else {'ssl': 'false'})
    plane = Plane(tmp_path, tls['url'], urls={'conductor': tls['conductor']},
                  rabbit=rabbit, exchange=EXCHANGE)
    plane.configure()
    migration.upgrade(engine.Database(plane.db_url))
    try:
        plane.spawn('conductor', 'conductor')
        failed = _wait_in_log(plane, 'conductor', words)
        assert 'retrying' in failed[0], failed
        # The driver's error does not say where it connects, nor how: the
        # line before it does (and never the password).
        port = urllib.parse.urlsplit(tls['url']).port
        told = _wait_in_log(plane, 'conductor', 'Message bus: ')
        assert told[0].endswith(
            'Message bus: rabbit://tristate-conductor@127.0.0.1:%d/, %s'
            % (port, bus.format(ca=ca))), told
        password = urllib.parse.urlsplit(tls['conductor']).password
        assert password not in plane.path.joinpath(
            'conductor.log').read_text()
    finally:
        plane.stop()
