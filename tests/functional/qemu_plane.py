"""A whole Tristate plane on real QEMU, for the tests that boot real guests
through the APIs (images, and next networking and guest access).

:func:`qemu_plane` starts, and removes whatever happens:

* one private libvirtd per host (``tools/test-services.sh libvirtd DIR
  start``: session mode, as user libvirt-qemu, its sockets and state in
  DIR), so the hosts share nothing but the plane, as two machines would;
* the embedded plane (conductor, in-process bus, SQLite) with one agent per
  host on the libvirt driver (virt_type qemu: TCG), each agent with an
  image cache of its own;
* the REST API over real HTTP (cheroot on 127.0.0.1, noauth, an admin as
  the user of token-less requests), its ``/image`` the image service the
  agents fetch from and upload to (``[image] service_url``, with the
  conductor's grants).

The :class:`QemuPlane` it yields speaks to the plane as a user would (the
compute API and the image API, over HTTP), plus what only a test can do:
force the host of a build (by disabling the other hosts in the database,
as ``tristate-manage host disable`` does) and read a guest's serial console
(:class:`~tests.functional.qemu_support.SerialConsole`).

Files: everything lives in one directory under /tmp (short: QEMU's socket
paths must fit in 107 bytes) that QEMU, running as libvirt-qemu (group
kvm), can reach; the plane's files are group kvm and group writable
(umask 002 while the plane runs; a session libvirtd does not hand the
disks to QEMU's user as the system one does).

Skipped, with the reason, where the pieces are missing (libvirtd, QEMU,
qemu-img, root) unless ``CI=true``, where that is a failure: CI installs
them.
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import requests

from api import service as api_service
from common.images import client as image_client
from conductor import embedded
from tests.functional import api_support
from tests.functional import conftest as functional
from tests.functional import qemu_support

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'tools', 'test-services.sh')
FLAVOR = 'guest'                 # small: TCG guests on a shared machine
FLAVOR_SPEC = '%s:1:128:1' % FLAVOR
BUILD_TIMEOUT = 60.0             # a build, a snapshot, a delete
POLL = 0.2
TOOLS = {'libvirtd': 'libvirt-daemon-system', 'virsh': 'libvirt-clients',
         'qemu-system-x86_64': 'qemu-system-x86', 'qemu-img': 'qemu-utils'}


def skip_or_fail(reason):
    """Skip with ``reason``; with ``CI=true``, fail: CI must run it."""
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs this test to run: ' + reason, pytrace=False)
    pytest.skip(reason)


def require_tools():
    """Skip (or fail in CI) unless this machine can run a QEMU plane."""
    missing = ['%s (Debian: %s)' % (tool, package)
               for tool, package in sorted(TOOLS.items())
               if shutil.which(tool) is None]
    if missing:
        skip_or_fail('not installed: %s' % ', '.join(missing))
    if os.geteuid() != 0:
        skip_or_fail('starting a libvirtd as user libvirt-qemu needs root')
    try:
        import libvirt  # noqa: F401
    except ImportError as err:
        skip_or_fail('libvirt-python cannot be imported: %s' % err)


class PrivateLibvirtd:
    """``tools/test-services.sh libvirtd DIR start|stop``; ``uri`` its
    QEMU driver (session mode) through its socket."""

    def __init__(self, directory):
        self.dir = directory
        self.uri = None

    def _run(self, what):
        return subprocess.run([SCRIPT, 'libvirtd', self.dir, what],
                              capture_output=True, text=True, timeout=90,
                              check=False)

    def start(self):
        done = self._run('start')
        if done.returncode != 0:
            skip_or_fail('the private libvirtd cannot run here: %s'
                         % done.stderr.strip())
        self.uri = done.stdout.strip().replace('test+unix:///default',
                                               'qemu+unix:///session')
        return self.uri

    def stop(self):
        """Stop it and reap what it started (guests, its virtlogd)."""
        self._run('stop')


def _bounded(predicate, what, *, timeout=BUILD_TIMEOUT, show=None):
    return functional.wait_for(predicate, timeout=timeout, what=what,
                               show=show)


class QemuPlane:
    """The plane's API (``url``) and hosts (``drivers``, by name; each
    agent's image cache directory in ``caches``)."""

    def __init__(self, plane, drivers, url, caches):
        self.plane = plane
        self.drivers = drivers
        self.caches = caches
        self.url = url
        self.http = requests.Session()
        # The newest microversion: createImage answers the image's id.
        self.http.headers['OpenStack-API-Version'] = 'compute latest'
        self.images = image_client.GlanceClient(url + '/image', timeout=60)
        self.servers = []            # made here: deleted at the end
        self.made = set()            # every server made here
        self.image_ids = []

    # --- the compute API -------------------------------------------------------

    def compute(self, method, path, body=None, *, expect=(200, 202, 204)):
        resp = self.http.request(method, self.url + '/v2.1' + path,
                                 json=body, timeout=30)
        assert resp.status_code in expect, (method, path, resp.status_code,
                                            resp.text)
        return resp.json() if resp.content else None

    def server(self, server_id):
        return self.compute('GET', '/servers/%s' % server_id)['server']

    def settled(self, server_id, *, timeout=BUILD_TIMEOUT):
        """The server once no task runs on it."""
        last = {}

        def idle():
            last['server'] = self.server(server_id)
            return (last['server'] if last['server']['OS-EXT-STS:task_state']
                    is None else None)
        return _bounded(idle, 'server %s to settle' % server_id,
                        timeout=timeout, show=lambda: self.show(last))

    def show(self, last):
        """What a failed wait shows: the server and its actions."""
        server = last.get('server') or {}
        actions = self.plane.statedb.list_actions(server['id']) if (
            server.get('id')) else []
        return {'status': server.get('status'),
                'fault': server.get('fault'),
                'host': server.get('OS-EXT-SRV-ATTR:host'),
                'actions': [(a['action'], a['result'], a['message'])
                            for a in actions]}

    def boot(self, name, image_id, host, **extra):
        """A server of ``image_id`` built on ``host`` (the other hosts are
        disabled while it is placed), ``extra`` keys in its create body
        (``config_drive=True``); the server once ACTIVE."""
        statedb = self.plane.statedb
        others = [h for h in self.drivers if h != host]
        for other in others:
            statedb.set_host_enabled(other, False, reason='test: build on %s'
                                     % host)
        try:
            created = self.compute('POST', '/servers', {'server': dict(
                extra, name=name, flavorRef=FLAVOR, imageRef=image_id)})
            self.track(created['server']['id'])
            server = self.settled(created['server']['id'])
        finally:
            for other in others:
                statedb.set_host_enabled(other, True)
        assert server['status'] == 'ACTIVE', self.show({'server': server})
        assert server['OS-EXT-SRV-ATTR:host'] == host, server
        return server

    def track(self, server_id):
        """A server the test made: deleted at the end (and on a shared
        libvirtd its domain removed if the delete did not)."""
        self.servers.append(server_id)
        self.made.add(server_id)

    def delete_server(self, server_id):
        self.compute('DELETE', '/servers/%s' % server_id)

        def gone():
            resp = self.http.get(self.url + '/v2.1/servers/%s' % server_id,
                                 timeout=30)
            return resp.status_code == 404
        _bounded(gone, 'server %s to be deleted' % server_id)
        self.servers.remove(server_id)

    def snapshot(self, server_id, name):
        """``createImage`` of the server; the new image's id, once the
        server is back to no task (the image may still be uploading)."""
        answer = self.compute('POST', '/servers/%s/action' % server_id,
                              {'createImage': {'name': name}})
        image_id = answer['image_id']            # 2.45+
        self.image_ids.append(image_id)
        self.settled(server_id)
        return image_id

    # --- the image API ---------------------------------------------------------

    def upload(self, path, name, disk_format):
        """Create an image and upload ``path`` to it; its id once active."""
        image = self.images.create(name=name, disk_format=disk_format,
                                   container_format='bare')
        self.image_ids.append(image['id'])
        with open(path, 'rb') as f:
            self.images.upload(image['id'], f, size=os.path.getsize(path))
        return self.wait_image(image['id'])['id']

    def wait_image(self, image_id, *, timeout=BUILD_TIMEOUT):
        """The image once active (failing at once if it is killed)."""
        last = {}

        def active():
            last['image'] = self.images.show(image_id)
            assert last['image']['status'] not in ('killed', 'deleted'), (
                last['image'])
            return last['image'] if last['image']['status'] == 'active' else (
                None)
        return _bounded(active, 'image %s to be active' % image_id,
                        timeout=timeout, show=lambda: last.get('image'))

    def delete_image(self, image_id):
        self.images.delete(image_id)
        self.image_ids.remove(image_id)

    # --- what only a test does -------------------------------------------------

    @contextlib.contextmanager
    def console(self, server):
        """The serial console of ``server`` (a server body) on its host."""
        drv = self.drivers[server['OS-EXT-SRV-ATTR:host']]
        dom = drv.connection.run(
            lambda conn: conn.lookupByUUIDString(server['id']))
        console = qemu_support.SerialConsole(dom)
        try:
            yield console
        finally:
            console.close()

    def domains(self, host):
        """The uuids of the domains on ``host``'s libvirtd."""
        return [info.uuid for info in self.drivers[host].list_domains()]

    def wait_no_domains(self, host, *, timeout=BUILD_TIMEOUT):
        """Wait until ``host`` has no domain left (a delete is answered
        before the agent has destroyed the domain)."""
        _bounded(lambda: not self.domains(host),
                 'every domain on %s to be destroyed' % host,
                 timeout=timeout, show=lambda: self.domains(host))

    def cleanup(self):
        """Delete what the test left (servers, then images), best effort:
        the plane's teardown removes the domains in any case."""
        for server_id in list(self.servers):
            with contextlib.suppress(Exception):
                self.delete_server(server_id)
        for image_id in list(self.image_ids):
            with contextlib.suppress(Exception):
                self.delete_image(image_id)


def _work_dir(path):
    """``path``, made group kvm, group writable and set-gid: what the plane
    writes there stays reachable by QEMU (user libvirt-qemu, group kvm)."""
    os.makedirs(path, exist_ok=True)
    shutil.chown(path, group='kvm')
    os.chmod(path, 0o2775)
    return path


def _conf(state_dir):
    conf = functional.new_conf(state_dir)
    api_support.configure(conf)
    functional.set_opts(conf, 'conductor', service_down_time=10,
                        flavors=list(conf.conductor.flavors) + [FLAVOR_SPEC])
    functional.set_opts(conf, 'compute', heartbeat_interval=0.5,
                        power_sync_interval=2, shutdown_timeout=5)
    return conf


def _driver(uri, work):
    from compute_agent.virt.libvirt import LibvirtDriver
    return LibvirtDriver(uri=uri, virt_type='qemu',
                         instances_path=_work_dir(os.path.join(work,
                                                               'instances')),
                         event_debounce=0.05, shutdown_timeout=5,
                         reconnect_interval_min=0.1,
                         reconnect_interval_max=0.5, reconnect_timeout=20)


def _heartbeat(statedb, host):
    return next((h['last_heartbeat'] for h in statedb.list_hosts()
                 if h['name'] == host), None)


@contextlib.contextmanager
def qemu_plane(hosts=('hosta', 'hostb'), *, shared_uri=None):
    """A :class:`QemuPlane` with one agent, on a private libvirtd of its
    own, per name in ``hosts``; everything removed afterwards.
    ``shared_uri``: one host instead, on that libvirtd (a privileged one,
    whose guests can sit on a bridge), with the agent's DHCP on; only the
    domains of the plane's own servers are removed from it."""
    require_tools()
    root = tempfile.mkdtemp(prefix='lvq-', dir='/tmp')
    os.chmod(root, 0o755)
    old_umask = os.umask(0o002)
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(shutil.rmtree, root, ignore_errors=True)
            work = _work_dir(os.path.join(root, 'w'))
            conf = _conf(os.path.join(work, 'state'))
            stack.callback(conf.reset)
            plane = embedded.Embedded(conf, hosts=0, url=embedded.MEMORY_URL,
                                      periodic_jobs=False).start()
            stack.callback(plane.stop)
            server = api_service.serve(
                conf, api_service.make_client(conf, plane.bus, plane.statedb),
                host='127.0.0.1', port=0)
            stack.callback(server.stop)
            conf.set_override('service_url', server.url + '/image',
                              group='image')
            drivers, caches, made = {}, {}, set()
            for index, host in enumerate(hosts):
                caches[host] = os.path.join(work, host, 'image-cache')
                if shared_uri is None:
                    drivers[host] = _start_host(stack, plane, conf, root,
                                                index, host, caches[host])
                    continue
                assert len(hosts) == 1, 'one host on a shared libvirtd'
                functional.set_opts(conf, 'dhcp', enabled=True,
                                    state_path=os.path.join(work, 'dhcp'))
                stack.callback(_remove_domains, shared_uri, made)
                drivers[host] = _start_agent(stack, plane, conf, shared_uri,
                                             host, caches[host])
                stack.callback(plane.agents[host].dhcp.stop_all)
            for host in hosts:  # the scheduler places on hosts that beat
                _bounded(lambda h=host: _heartbeat(plane.statedb, h),
                         'the first heartbeat of %s' % host, timeout=30)
            qemu = QemuPlane(plane, drivers, server.url, caches)
            qemu.made = made
            stack.callback(qemu.cleanup)
            yield qemu
    finally:
        os.umask(old_umask)


def _start_host(stack, plane, conf, root, index, host, cache):
    """Host ``host``: its libvirtd (in ``root``/<index>: short paths), its
    driver and its agent, with its image cache in ``cache``; its driver."""
    libvirtd = PrivateLibvirtd(os.path.join(root, str(index)))
    os.mkdir(libvirtd.dir)
    os.chmod(libvirtd.dir, 0o755)
    uri = libvirtd.start()
    stack.callback(libvirtd.stop)
    stack.callback(_remove_domains, uri)
    return _start_agent(stack, plane, conf, uri, host, cache)


def _start_agent(stack, plane, conf, uri, host, cache):
    """Host ``host``'s driver (on ``uri``) and agent; its driver."""
    drv = _driver(uri, _work_dir(os.path.dirname(cache)))
    drv.init_host(host)
    # The agent's ImageCache reads the path when it is made: each agent
    # its own, as on separate machines.
    conf.set_override('cache_path', cache, group='image')
    plane.start_agent(host, driver=drv)
    stack.callback(plane.stop_agent, host)
    return drv


def _remove_domains(uri, only=None):
    """No domain outlives the test (the plane deletes its servers first;
    this is for a test that failed half way), once the agent is stopped;
    on a shared libvirtd ``only`` those uuids."""
    import libvirt
    conn = libvirt.open(uri)
    try:
        for dom in conn.listAllDomains():
            if only is not None and dom.UUIDString() not in only:
                continue
            with contextlib.suppress(libvirt.libvirtError):
                dom.destroy()
            with contextlib.suppress(libvirt.libvirtError):
                dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)
    finally:
        conn.close()


def wait_console(console, marker, timeout):
    """``console.wait_for`` with the time it took, in seconds."""
    start = time.monotonic()
    console.wait_for(marker, timeout)
    return time.monotonic() - start
