"""Many processes of one plane: a RabbitMQ user per agent, HAProxy in front
of several ``tristate-api`` processes, and a load sent through it.

:class:`AgentUsers` makes one RabbitMQ user per hypervisor host, with the
permissions of the operator guide's "One user per agent" (on the plane's
own exchange and topics), with ``rabbitmqctl import_definitions`` on the
broker of ``TRISTATE_TEST_RABBIT_CTL`` (``tools/test-services.sh rabbit
DIR ctl ...``), and deletes them afterwards. Every rabbitmqctl run boots an
Erlang VM (1 to 15 s on a busy machine): one run makes them all, one
removes them all.

:class:`Haproxy` runs Debian's ``haproxy`` on loopback with the
configuration of the operator guide's "Scaling out" section (health checks
on ``/healthcheck``, connection failures sent to another API).

:class:`HttpLoad` is :class:`~tests.integration.cluster_support.Load`
through the REST API (builds, stops, starts, reboots, hard deletes), so
that the API processes are in the path of every request.
"""

import json
import secrets
import shlex
import shutil
import subprocess
import threading
import time
import urllib.parse

import pytest
import requests

from tests import images_support

from .cluster_support import Load

HAPROXY = shutil.which('haproxy')
TOKEN = 'alice:demo'        # noauth: the plane's user and project
HTTP_TIMEOUT = 90           # above the API's rpc_timeout (30 s)

# The operator guide's configuration ("Scaling out": several API
# processes), with loopback ports and quick health checks for a test.
HAPROXY_CFG = '''\
global
    maxconn 256
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-request 10s
    timeout check 5s
    option http-buffer-request
    retries 3
    option redispatch 1
frontend compute
    bind 127.0.0.1:%(front)d
    default_backend tristate_api
backend tristate_api
    balance leastconn
    option httpchk GET /healthcheck
    default-server check inter 1s fall 3 rise 2 maxconn 16
%(servers)s
'''


def _rabbitmqctl(ctl, *args, stdin=None, timeout=180):
    done = subprocess.run(shlex.split(ctl) + ['ctl', *args], input=stdin,
                          capture_output=True, text=True, check=False,
                          timeout=timeout)
    assert done.returncode == 0, 'rabbitmqctl %s failed (%d): %s%s' % (
        args[0], done.returncode, done.stdout, done.stderr)
    return done.stdout


def agent_permissions(*, exchange, compute_topic, conductor_topic, host):
    """(configure, write, read, topic write, topic read) of host ``host``'s
    own user: the operator guide's "One user per agent"."""
    topic = compute_topic.replace('.', r'\.')
    names = r'%s|%s|%s\.%s|%s_fanout.*|reply_.*' % (
        exchange.replace('.', r'\.'), topic, topic, host, topic)
    return ('^(%s)$' % names, r'^(%s|amq\.default)$' % names,
            '^(%s)$' % names, '^%s.*' % conductor_topic.replace('.', r'\.'),
            r'^%s(\.%s)?$' % (topic, host))


class AgentUsers:
    """``tristate-compute-TAG-HOST`` for each host of ``plane``; ``urls``
    are the plane's ``urls`` entries (``agent:HOST``)."""

    def __init__(self, broker, plane):
        broker.require_ctl()
        self.ctl = broker.ctl
        self.plane = plane
        self.broker = urllib.parse.urlsplit(broker.url)
        self.passwords = {host: secrets.token_hex(12) for host in plane.hosts}
        self.made = False

    def name(self, host):
        return 'tristate-compute-%s-%s' % (self.plane.tag, host)

    def url(self, host):
        return 'rabbit://%s:%s@%s:%d/' % (
            self.name(host), self.passwords[host], self.broker.hostname,
            self.broker.port)

    @property
    def urls(self):
        return {'agent:%s' % host: self.url(host) for host in self.plane.hosts}

    def definitions(self):
        plane = self.plane
        users, perms, topics = [], [], []
        for host, password in self.passwords.items():
            conf, write, read, t_write, t_read = agent_permissions(
                exchange=plane.exchange,
                compute_topic='tristate-compute-%s' % plane.tag,
                conductor_topic='tristate-conductor-%s' % plane.tag,
                host=host)
            users.append({'name': self.name(host), 'password': password,
                          'tags': ''})
            perms.append({'user': self.name(host), 'vhost': '/',
                          'configure': conf, 'write': write, 'read': read})
            topics.append({'user': self.name(host), 'vhost': '/',
                           'exchange': plane.exchange, 'write': t_write,
                           'read': t_read})
        return {'users': users, 'permissions': perms,
                'topic_permissions': topics}

    def create(self):
        self.made = True
        _rabbitmqctl(self.ctl, 'import_definitions', '--format', 'json',
                     stdin=json.dumps(self.definitions()))
        return self

    def remove(self):
        if not self.made:
            return
        names = ', '.join('<<"%s">>' % self.name(h) for h in self.passwords)
        _rabbitmqctl(self.ctl, 'eval', '[rabbit_auth_backend_internal:'
                     'delete_user(U, <<"tristate-tests">>) || U <- [%s]].'
                     % names)
        self.made = False

    def listed(self):
        """The broker's users that are this plane's."""
        out = _rabbitmqctl(self.ctl, 'list_users', '--formatter', 'json')
        return sorted(u['user'] for u in json.loads(out)
                      if u['user'].startswith('tristate-compute-%s-'
                                              % self.plane.tag))


class Haproxy:
    """``haproxy -db -f CFG`` on 127.0.0.1:``front`` in front of
    ``backends`` ({name: port})."""

    def __init__(self, path, front, backends):
        if HAPROXY is None:
            pytest.skip('HAProxy is not installed (apt-get install haproxy)')
        self.path = path
        self.front = front
        self.url = 'http://127.0.0.1:%d' % front
        servers = '\n'.join('    server %s 127.0.0.1:%d' % item
                            for item in sorted(backends.items()))
        self.cfg = path / 'haproxy.cfg'
        self.cfg.write_text(HAPROXY_CFG % {'front': front, 'servers': servers})
        self.proc = None

    def start(self, timeout=30):
        with open(self.path / 'haproxy.log', 'ab') as log:
            self.proc = subprocess.Popen([HAPROXY, '-db', '-f', str(self.cfg)],
                                         stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, (
                self.path / 'haproxy.log').read_text()
            try:
                requests.get(self.url + '/', timeout=5)
                return self
            except requests.ConnectionError:
                assert time.monotonic() < deadline, 'HAProxy did not listen'
                time.sleep(0.05)

    def state_changes(self):
        """HAProxy's lines saying a server went DOWN or came UP."""
        text = (self.path / 'haproxy.log').read_text(errors='replace')
        return [line.strip()[:200] for line in text.splitlines()
                if ' is DOWN' in line or ' is UP' in line]

    def seen(self, server, state):
        """How many times HAProxy logged that ``server`` went ``state``
        ('DOWN' or 'UP'): it logs a change only, never a server that stays
        as it was."""
        return len([line for line in self.state_changes()
                    if '/%s is %s' % (server, state) in line])

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


class HttpError(Exception):
    pass


# The body of each action of the load (cluster_support.NEXT).
BODIES = {'stop': {'os-stop': None}, 'start': {'os-start': None},
          'reboot': {'reboot': {'type': 'SOFT'}}}


class HttpLoad(Load):
    """:class:`Load` through the REST API at ``base``: a call that does
    not answer 2xx (502 from the proxy, 503 from the API) is a failed
    call."""

    def __init__(self, plane, pool, base, **kwargs):
        super().__init__(plane, pool, **kwargs)
        self.base = base
        self._local = threading.local()

    def _http(self, method, path, body=None):
        session = getattr(self._local, 'session', None)
        if session is None:
            session = self._local.session = requests.Session()
        resp = session.request(method, self.base + path, json=body,
                               headers={'X-Auth-Token': TOKEN},
                               timeout=HTTP_TIMEOUT)
        if resp.status_code >= 300:
            raise HttpError('%d %s' % (resp.status_code, resp.text[:300]))
        return resp

    def create(self, name):
        return self._http('POST', '/v2.1/servers', {'server': {
            'name': name, 'flavorRef': 'tiny',
            'imageRef': images_support.IMAGE}}).json()['server']['id']

    def run_action(self, uuid, action):
        self._http('POST', '/v2.1/servers/%s/action' % uuid, BODIES[action])

    def hard_delete(self, uuid):
        self._http('DELETE', '/v2.1/servers/%s' % uuid)
        return self.plane.instance(uuid)
