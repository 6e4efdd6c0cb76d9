"""A plane in front of an existing Glance, end to end (issue 21, "Or a
real Glance"): ``[image] api_endpoint`` names PyPI's Glance (open mode,
no Keystone: :mod:`glance_support`), and the compute API answers over
real HTTP (cheroot, as ``tristate-api`` serves it).

The agent runs the libvirt driver on libvirt's test driver (``test:///``
with a node file: no daemon) with real ``qemu-img``: a build fetches the
image from Glance into the agent's cache and makes the disk an overlay on
it; a snapshot flattens that disk to qcow2 and uploads it back to Glance.

What is checked: the API serves no images of its own (``/image`` is a 404
naming the Glance); a create names the image by its Glance id and is
checked against Glance (an unknown id is a 400); the agent downloads it
once into its cache; ``createImage`` creates the queued image in Glance
(Nova's properties) and the agent's upload makes it active there;
a new server builds from that snapshot; ``createBackup`` with rotation 1
keeps only the newest backup of its type.
"""

import hashlib
import os
import shutil
import uuid as uuidlib

import pytest
import requests

from api import server as api_server
from tests.functional import api_support
from tests.functional import conftest as functional
from tests.integration import glance_support

try:
    import libvirt  # noqa: F401
except ImportError as err:
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs libvirt-python: %s' % err, pytrace=False)
    pytest.skip('libvirt-python cannot be imported: %s' % err,
                allow_module_level=True)

from compute_agent.virt.libvirt import LibvirtDriver  # noqa: E402
from compute_agent.virt.libvirt.disks import LocalImages  # noqa: E402
from conductor import embedded  # noqa: E402

glance = glance_support.fixture()

HOST = 'lv1'
TIMEOUT = 60.0
TOKEN = 'alice:demo'
NODE = """<node>
  <cpu><mhz>2000</mhz><model>x86_64</model><active>16</active><max>16</max>
  <nodes>1</nodes><sockets>1</sockets><cores>8</cores><threads>2</threads></cpu>
  <memory>16777216</memory>
</node>
"""
# A raw disk the agent can build an overlay on: 2 MiB, recognisable.
DISK = b'TRISTATE-EXISTING-GLANCE\n'.ljust(2 * 1024 * 1024, b'\0')


@pytest.fixture(scope='module')
def plane(glance, tmp_path_factory):
    """Conductor, one libvirt agent and the API on a real port, with
    ``[image] api_endpoint`` = the Glance."""
    if shutil.which('qemu-img') is None:
        glance_support.require_tool('qemu-img')
    tmp = tmp_path_factory.mktemp('plane')
    conf = functional.new_conf(tmp)
    functional.set_opts(conf, 'image', api_endpoint=glance.url)
    functional.set_opts(conf, 'compute', power_sync_interval=600)
    node = tmp / 'node.xml'
    node.write_text(NODE)
    (tmp / 'images').mkdir()
    driver = LibvirtDriver(uri='test://%s' % node, virt_type='kvm',
                           images=LocalImages(tmp / 'images'),
                           instances_path=str(tmp / 'instances'),
                           event_debounce=0.05, shutdown_timeout=2)
    driver.init_host(HOST)
    plane = embedded.Embedded(conf, hosts=0, url=embedded.MEMORY_URL,
                              periodic_jobs=False).start()
    plane.start_agent(HOST, driver=driver)
    functional.wait_heartbeat(plane, HOST)
    server = api_server.ApiServer(api_support.make_app(plane), port=0)
    server.start()
    yield plane, server.url
    server.stop()
    plane.stop()
    conf.reset()


class Compute:
    """The compute API over HTTP, as one user of project ``demo``."""

    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None, version='2.45'):
        return requests.request(method, self.url + path, json=body,
                                timeout=30, headers={
                                    'X-Auth-Token': TOKEN,
                                    'OpenStack-API-Version':
                                        'compute %s' % version})

    def settled(self, server_id):
        def done():
            server = self.call('GET', '/v2.1/servers/' + server_id).json()[
                'server']
            return server if server['OS-EXT-STS:task_state'] is None else None
        return functional.wait_for(done, timeout=TIMEOUT,
                                   what='server %s idle' % server_id)

    def action(self, server_id, body):
        resp = self.call('POST', '/v2.1/servers/%s/action' % server_id, body)
        assert resp.status_code == 202, resp.text
        self.settled(server_id)
        return resp.json()['image_id']


@pytest.fixture(scope='module')
def compute(plane):
    return Compute(plane[1])


@pytest.fixture(scope='module')
def image(glance):
    """An image an operator uploaded to Glance: its record."""
    resp = requests.post(glance.url + '/v2/images', timeout=30, json={
        'name': 'base', 'disk_format': 'raw', 'container_format': 'bare'})
    assert resp.status_code == 201, resp.text
    image_id = resp.json()['id']
    resp = requests.put(glance.url + '/v2/images/%s/file' % image_id,
                        data=DISK, timeout=60, headers={
                            'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 204, resp.text
    return requests.get(glance.url + '/v2/images/' + image_id,
                        timeout=30).json()


@pytest.fixture(scope='module')
def server(compute, image):
    """A server built from the Glance image through the compute API."""
    resp = compute.call('POST', '/v2.1/servers', {'server': {
        'name': 'vm', 'flavorRef': 'tiny', 'imageRef': image['id']}})
    assert resp.status_code == 202, resp.text
    built = compute.settled(resp.json()['server']['id'])
    assert built['status'] == 'ACTIVE', built
    return built


def _glance_image(glance, image_id):
    return requests.get(glance.url + '/v2/images/' + image_id, timeout=30)


@pytest.mark.parametrize('path', ['/image', '/image/', '/image/v2/images'])
def test_the_api_serves_no_images_of_its_own(compute, glance, path):
    resp = compute.call('GET', path)
    assert resp.status_code == 404
    assert glance.url in resp.text


def test_a_create_naming_an_image_glance_lacks_is_a_400(compute):
    missing = str(uuidlib.uuid4())
    resp = compute.call('POST', '/v2.1/servers', {'server': {
        'name': 'vm', 'flavorRef': 'tiny', 'imageRef': missing}})
    assert resp.status_code == 400
    assert missing in resp.json()['badRequest']['message']


def test_the_agent_fetched_the_image_from_glance_into_its_cache(
        plane, glance, image, server):
    assert glance.requests_seen(
        'GET', '/v2/images/%s/file' % image['id']) == 1
    cache = os.path.join(plane[0].conf.state_dir, 'image-cache')
    digests = []
    for name in os.listdir(cache):
        path = os.path.join(cache, name)
        if os.path.isfile(path) and os.path.getsize(path) == len(DISK):
            with open(path, 'rb') as cached:
                digests.append(hashlib.sha512(cached.read()).hexdigest())
    assert image['os_hash_value'] in digests


@pytest.fixture(scope='module')
def snapshot(compute, server):
    return compute.action(server['id'], {'createImage': {'name': 'snap'}})


def test_create_image_uploads_the_snapshot_to_glance(compute, glance,
                                                     server, image, snapshot):
    image_id = snapshot
    shown = _glance_image(glance, image_id).json()
    assert (shown['status'], shown['disk_format'], shown['image_type'],
            shown['instance_uuid'], shown['base_image_ref'],
            shown['min_disk']) == ('active', 'qcow2', 'snapshot',
                                   server['id'], image['id'], 1)
    data = requests.get(glance.url + '/v2/images/%s/file' % image_id,
                        timeout=60).content
    assert data[:4] == b'QFI\xfb'          # qcow2, flattened by qemu-img
    assert hashlib.sha512(data).hexdigest() == shown['os_hash_value']


def test_a_server_builds_from_the_snapshot(plane, compute, glance,
                                          snapshot):
    """The snapshot is an image like any other: fetched from Glance into
    the cache (qcow2 there) and booted."""
    file_path = '/v2/images/%s/file' % snapshot
    before = glance.requests_seen('GET', file_path)
    resp = compute.call('POST', '/v2.1/servers', {'server': {
        'name': 'from-snap', 'flavorRef': 'tiny', 'imageRef': snapshot}})
    assert resp.status_code == 202, resp.text
    built = compute.settled(resp.json()['server']['id'])
    assert (built['status'], built['image']['id']) == ('ACTIVE', snapshot)
    assert glance.requests_seen('GET', file_path) == before + 1


def _backups(glance, server_id):
    resp = requests.get(glance.url + '/v2/images', timeout=30, params={
        'instance_uuid': server_id, 'image_type': 'backup'})
    return {b['id']: (b['backup_type'], b['status'])
            for b in resp.json()['images']}


def test_backups_rotate_in_glance(compute, glance, server):
    def backup(kind):
        return compute.action(server['id'], {'createBackup': {
            'name': 'bk-' + kind, 'backup_type': kind, 'rotation': 1}})

    weekly = backup('weekly')
    first = backup('daily')
    assert _backups(glance, server['id']) == {
        weekly: ('weekly', 'active'), first: ('daily', 'active')}
    second = backup('daily')
    # rotation 1 keeps the newest daily one; the weekly one is another type
    assert _backups(glance, server['id']) == {
        weekly: ('weekly', 'active'), second: ('daily', 'active')}
    assert _glance_image(glance, first).status_code == 404
