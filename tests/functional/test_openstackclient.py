"""Images as a user reaches them: the real ``openstack`` command line
(python-openstackclient, run as a subprocess) configured with a
``clouds.yaml``, against the embedded API over real HTTP (cheroot on
127.0.0.1, a free port), the compute API at ``/v2.1`` and the image API at
``/image`` of that port, on a two-host plane of fake hypervisors.

No Keystone: each cloud entry sends noauth's ``USER:PROJECT`` token with
keystoneauth's ``admin_token`` plugin and names both endpoints. The user
is a project of its own; ``tristate-other`` another project;
``tristate-admin`` the admin, only to see where a server runs. Each
command of issue 21's list is a test; the image, the server and the
snapshot they share are made once, by the command that makes them, in
module fixtures (so any test also runs alone).
"""

import hashlib
import subprocess
import uuid as uuidlib

import openstack
import pytest

from api import service as api_service
from tests.functional import api_support
from tests.functional import osc_support
from tests.functional.conftest import TIMEOUT
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for
from tests.images_support import IMAGES

OPENSTACK = osc_support.OPENSTACK
SUFFIX = uuidlib.uuid4().hex[:8]
PROJECT = 'project-%s' % SUFFIX
TOKENS = {'tristate': 'user-%s:%s' % (SUFFIX, PROJECT),
          'tristate-other': 'other-%s:other-%s' % (SUFFIX, SUFFIX),
          'tristate-admin': api_support.ADMIN_TOKEN}
IMAGE_NAME = 'osc-image'
SNAPSHOT_NAME = 'osc-snapshot'
# Generous: every command starts a Python process that imports
# openstackclient (seconds on a loaded 2-core machine) before it waits.
COMMAND_TIMEOUT = osc_support.COMMAND_TIMEOUT
WAIT = TIMEOUT * 6

CLOUD = osc_support.CLOUD


@pytest.fixture(scope='module')
def plane(shared_plane):
    return shared_plane


@pytest.fixture(scope='module')
def url(plane):
    conf = api_support.configure(plane.conf)
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    # Where the agents upload snapshots: this API's image service.
    set_opts(conf, 'image', service_url=server.url + '/image')
    yield server.url
    server.stop()


@pytest.fixture(scope='module')
def home(tmp_path_factory, url):
    """A user's directory: its ``clouds.yaml`` and a qcow2 disk image."""
    home = tmp_path_factory.mktemp('osc-user')
    osc_support.write_clouds(home, CLOUD, url, TOKENS)
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2',
                    str(home / 'disk.qcow2'), '16M'], check=True)
    return home


osc = osc_support.osc
osc_fails = osc_support.fails


def host_of(home, server_id):
    """Where a server runs, read as the admin (members do not see it)."""
    return osc(home, 'server', 'show', server_id,
               cloud='tristate-admin')['OS-EXT-SRV-ATTR:host']


def _digests(path):
    md5, sha512 = hashlib.md5(), hashlib.sha512()
    data = path.read_bytes()
    md5.update(data)
    sha512.update(data)
    return md5.hexdigest(), sha512.hexdigest()


@pytest.fixture(scope='module')
def image(home):
    return osc(home, 'image', 'create', '--file', str(home / 'disk.qcow2'),
               '--disk-format', 'qcow2', IMAGE_NAME)


@pytest.fixture(scope='module')
def server(home, image):
    return osc(home, 'server', 'create', '--image', IMAGE_NAME, '--flavor',
               'tiny', '--wait', 'osc-vm')


@pytest.fixture(scope='module')
def snapshot(home, server):
    return osc(home, 'server', 'image', 'create', '--name', SNAPSHOT_NAME,
               '--wait', server['id'])


# --- images ----------------------------------------------------------------------

def test_image_create(home, image):
    md5, sha512 = _digests(home / 'disk.qcow2')
    assert image['name'] == IMAGE_NAME
    assert image['status'] == 'active'
    assert (image['disk_format'], image['container_format']) == (
        'qcow2', 'bare')
    assert image['size'] == (home / 'disk.qcow2').stat().st_size
    assert image['virtual_size'] == 16 * 1024 * 1024
    assert image['checksum'] == md5
    # openstackclient prints Glance's os_hash_* among the properties
    hashed = image['properties']
    assert (hashed['os_hash_algo'], hashed['os_hash_value']) == (
        'sha512', sha512)
    assert image['owner'] == PROJECT
    assert image['visibility'] == 'shared'        # Glance's default


def test_image_list(home, image):
    listed = {i['ID']: i for i in osc(home, 'image', 'list')}
    assert listed[image['id']]['Name'] == IMAGE_NAME
    assert listed[image['id']]['Status'] == 'active'
    assert IMAGES['cirros'] in listed            # public: everyone sees it
    (only,) = osc(home, 'image', 'list', '--name', IMAGE_NAME)
    assert only['ID'] == image['id']
    public = [i['ID'] for i in osc(home, 'image', 'list', '--public')]
    assert IMAGES['cirros'] in public and image['id'] not in public


def test_image_show(home, image):
    for ref in (IMAGE_NAME, image['id']):
        shown = osc(home, 'image', 'show', ref)
        assert shown['id'] == image['id']
        assert shown['status'] == 'active'
        assert shown['properties']['os_hash_value'] == image[
            'properties']['os_hash_value']
        assert 'location' not in shown and 'locations' not in shown
    # A private image: another project finds no such image.
    assert 'No Image found for %s' % image['id'] in osc_fails(
        home, 'image', 'show', image['id'], cloud='tristate-other')


# --- servers -------------------------------------------------------------------

def test_server_create_from_an_image_name(home, image, server):
    assert server['status'] == 'ACTIVE'
    assert server['name'] == 'osc-vm'
    assert server['image'] == '%s (%s)' % (IMAGE_NAME, image['id'])
    assert host_of(home, server['id']) in ('host1', 'host2')


def test_server_image_create(home, server, snapshot):
    assert snapshot['name'] == SNAPSHOT_NAME
    assert snapshot['status'] == 'active'
    assert snapshot['disk_format'] == 'qcow2'
    assert snapshot['owner'] == PROJECT
    shown = osc(home, 'image', 'show', SNAPSHOT_NAME)
    assert shown['id'] == snapshot['id']
    assert shown['properties']['image_type'] == 'snapshot'
    assert shown['properties']['instance_uuid'] == server['id']
    # One image, not one per retry of a client that saw a failure.
    assert len(osc(home, 'image', 'list', '--name', SNAPSHOT_NAME)) == 1


def test_server_create_from_the_snapshot_on_another_host(
        home, plane, server, snapshot):
    first = host_of(home, server['id'])
    plane.statedb.set_host_enabled(first, False, reason='test: elsewhere')
    try:
        copy = osc(home, 'server', 'create', '--image', SNAPSHOT_NAME,
                   '--flavor', 'tiny', '--wait', 'osc-copy')
    finally:
        plane.statedb.set_host_enabled(first, True)
    assert copy['status'] == 'ACTIVE'
    assert copy['image'] == '%s (%s)' % (SNAPSHOT_NAME, snapshot['id'])
    (other,) = {'host1', 'host2'} - {first}
    assert host_of(home, copy['id']) == other
    osc(home, 'server', 'delete', '--wait', copy['id'], parse=False)


def test_server_rebuild_with_another_image(home, server):
    rebuilt = osc(home, 'server', 'rebuild', '--image', 'debian-12',
                  '--wait', server['id'])
    # It prints the rebuild's answer (Nova's: the server as the rebuild
    # starts, with its new image), after waiting for it to be ACTIVE.
    assert rebuilt['status'] == 'REBUILD'
    assert rebuilt['image'] == 'debian-12 (%s)' % IMAGES['debian-12']
    shown = osc(home, 'server', 'show', server['id'])
    assert IMAGES['debian-12'] in shown['image']
    assert shown['status'] == 'ACTIVE'


def test_server_rescue_with_an_image(home, plane):
    created = osc(home, 'server', 'create', '--image', IMAGE_NAME,
                  '--flavor', 'tiny', '--wait', 'osc-rescue')
    osc(home, 'server', 'rescue', '--image', 'rescue-img', created['id'],
        parse=False)
    last = {}

    def rescued():
        last['server'] = osc(home, 'server', 'show', created['id'])
        return last['server']['status'] == 'RESCUE'
    wait_for(rescued, timeout=WAIT, what='the rescue',
             show=lambda: last.get('server', {}).get('status'))
    # the fake hypervisor booted the image the user named
    record = domain(plane, host_of(home, created['id']), created['id'])
    assert record['rescue_image_ref'] == IMAGES['rescue-img']
    osc(home, 'server', 'delete', '--wait', created['id'], parse=False)


def test_image_delete(home):
    made = osc(home, 'image', 'create', '--file', str(home / 'disk.qcow2'),
               '--disk-format', 'qcow2', 'osc-doomed')
    osc(home, 'image', 'delete', 'osc-doomed', parse=False)
    assert made['id'] not in [i['ID'] for i in osc(home, 'image', 'list')]
    assert 'No Image found for %s' % made['id'] in osc_fails(
        home, 'image', 'show', made['id'])


# --- openstacksdk's cloud layer (what Ansible's openstack.cloud uses) ----------

@pytest.fixture
def conn(home, monkeypatch):
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(home / 'clouds.yaml'))
    conn = openstack.connect(cloud='tristate')
    yield conn
    conn.close()


def test_openstacksdk_create_server_with_an_image_name(conn, image):
    """``create_server(image=NAME)`` finds the image in the image service
    and boots it (issue 21: the lookup failed, there was no image
    service)."""
    created = conn.create_server('sdk-by-name', image=IMAGE_NAME,
                                 flavor='tiny', wait=False)
    try:
        server = conn.compute.wait_for_server(created, wait=WAIT,
                                              interval=0.2)
        assert server.status == 'ACTIVE'
        assert server.image.id == image['id']
    finally:
        conn.delete_server(created.id, wait=True, timeout=WAIT)


def test_openstacksdk_create_server_waits_for_an_active_server(conn, image,
                                                               plane):
    """openstacksdk also waits for an address, and deletes a server that
    reaches ACTIVE without one (it did, before guest networking: issue
    23); with a network to plug it into, the server is kept."""
    if not plane.statedb.list_networks():
        plane.statedb.create_network(
            {'name': 'osc-net', 'cidr': '10.70.0.0/24', 'bridge': 'br-osc'},
            network_id=str(uuidlib.uuid4()))
    server = conn.create_server('sdk-wait', image=IMAGE_NAME, flavor='tiny',
                                wait=True, timeout=WAIT)
    kept = conn.compute.get_server(server.id)
    conn.delete_server(server.id, wait=True, timeout=WAIT)
    assert server.status == 'ACTIVE' and kept.addresses
    assert server.image.id == image['id']
