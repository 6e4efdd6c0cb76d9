"""The config drive's ISO (compute_agent/configdrive.py), read back with
pycdlib: label ``config-2``, every file of the ConfigDrive-2 layout under
its Rock Ridge and Joliet names with the content cloud-init reads, the
network data of the ports, and the file's life (written, replaced,
removed)."""

import base64
import io
import json
import os

import pycdlib
import pytest

from compute_agent import configdrive
from compute_agent import tasks
from compute_agent.virt.driver import VirtError

UUID = '6c1e9a52-0d4e-4f5e-9a0b-1c2d3e4f5a6b'
INST = {'uuid': UUID, 'name': 'web 1', 'project_id': 'proj',
        'image_ref': 'img-1', 'flavor_name': 'tiny'}
KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ0 me@laptop'
USER_DATA = b'#!/bin/sh\necho marker > /tmp/marker\n'
PORT = {'id': 'a1b2c3d4-e5f6-4711-8899-aabbccddeeff',
        'mac': 'fa:16:3e:12:34:56',
        'network': {'id': 'net-1', 'name': 'private', 'bridge': 'br0',
                    'libvirt_network': None, 'mtu': 1450,
                    'cidr': '10.1.0.0/24', 'gateway': '10.1.0.1',
                    'dns': ['10.1.0.2'], 'ipv6_cidr': 'fd00::/64',
                    'ipv6_gateway': 'fd00::1'},
        'fixed_ips': [{'address': '10.1.0.5', 'version': 4},
                      {'address': 'fd00::5', 'version': 6}]}


def _params(**extra):
    params = {'config_drive': True, 'key_name': 'mykey', 'key_data': KEY,
              'user_data': base64.b64encode(USER_DATA).decode(),
              'config_drive_meta': {'hostname': 'web-1',
                                    'metadata': {'role': 'web'},
                                    'launch_index': 2,
                                    'availability_zone': 'nova'},
              'ports': [PORT]}
    params.update(extra)
    return params


@pytest.fixture
def conf(tmp_path):
    class Conf:
        state_dir = str(tmp_path)
    return Conf()


def read(path):
    """{rock ridge path: bytes} of every file, and the volume label;
    checks that the Joliet names say the same."""
    iso = pycdlib.PyCdlib()
    iso.open(path)
    found = {}
    try:
        for top, _dirs, names in iso.walk(rr_path='/'):
            for name in names:
                rel = '%s/%s' % (top.rstrip('/'), name)
                out = io.BytesIO()
                iso.get_file_from_iso_fp(out, rr_path=rel)
                joliet = io.BytesIO()
                iso.get_file_from_iso_fp(joliet, joliet_path=rel)
                assert joliet.getvalue() == out.getvalue(), rel
                found[rel.lstrip('/')] = out.getvalue()
        label = iso.pvd.volume_identifier.decode().strip()
    finally:
        iso.close()
    return found, label


def test_the_drive_holds_the_configdrive_2_layout(conf):
    path = configdrive.make(conf, 'host-a', INST, _params())
    assert path == configdrive.path(conf, 'host-a', UUID)
    files, label = read(path)
    assert label == 'config-2'
    for version in configdrive.OPENSTACK_VERSIONS:
        assert 'openstack/%s/meta_data.json' % version in files
        assert files['openstack/%s/user_data' % version] == USER_DATA
    assert 'openstack/2012-08-10/network_data.json' not in files
    assert 'openstack/2015-10-15/network_data.json' in files
    assert 'openstack/2013-04-04/vendor_data.json' not in files
    assert 'openstack/2016-06-30/vendor_data2.json' not in files
    for name in ('vendor_data.json', 'vendor_data2.json'):
        assert json.loads(files['openstack/latest/' + name]) == {}
    assert files['ec2/latest/user-data'] == USER_DATA
    assert files['ec2/2009-04-04/user-data'] == USER_DATA


def test_meta_data_says_who_the_guest_is(conf):
    files, _ = read(configdrive.make(conf, 'host-a', INST, _params()))
    meta = json.loads(files['openstack/latest/meta_data.json'])
    seed = base64.b64decode(meta.pop('random_seed'))
    assert len(seed) == 512
    assert meta == {
        'uuid': UUID, 'name': 'web 1', 'hostname': 'web-1',
        'launch_index': 2, 'availability_zone': 'nova',
        'project_id': 'proj', 'meta': {'role': 'web'},
        'public_keys': {'mykey': KEY},
        'keys': [{'name': 'mykey', 'type': 'ssh', 'data': KEY}],
        'devices': []}
    ec2 = json.loads(files['ec2/latest/meta-data.json'])
    assert ec2['public-keys'] == {'0': {'openssh-key': KEY}}
    assert (ec2['hostname'], ec2['local-ipv4'], ec2['ami-id'],
            ec2['instance-type'], ec2['ami-launch-index']) == (
        'web-1', '10.1.0.5', 'img-1', 'tiny', 2)
    assert ec2['placement'] == {'availability-zone': 'nova'}


def test_network_data_follows_the_ports(conf):
    files, _ = read(configdrive.make(conf, 'host-a', INST, _params()))
    data = json.loads(files['openstack/latest/network_data.json'])
    (link,) = data['links']
    assert link == {'id': 'tapa1b2c3d4-e5', 'vif_id': PORT['id'],
                    'type': 'phy', 'ethernet_mac_address': PORT['mac'],
                    'mtu': 1450}
    v4, v6 = data['networks']
    assert v4 == {'id': 'network0', 'type': 'ipv4', 'link': link['id'],
                  'ip_address': '10.1.0.5', 'netmask': '255.255.255.0',
                  'network_id': 'net-1',
                  'routes': [{'network': '0.0.0.0', 'netmask': '0.0.0.0',
                              'gateway': '10.1.0.1'}],
                  'services': [{'type': 'dns', 'address': '10.1.0.2'}]}
    assert (v6['type'], v6['ip_address'], v6['netmask'],
            v6['routes'][0]['gateway']) == (
        'ipv6', 'fd00::5', 'ffff:ffff:ffff:ffff::', 'fd00::1')
    assert data['services'] == [{'type': 'dns', 'address': '10.1.0.2'}]


def test_no_ports_no_key_no_user_data(conf):
    params = {'config_drive': True, 'key_name': None, 'key_data': None,
              'user_data': None}
    files, _ = read(configdrive.make(conf, 'host-a', INST, params))
    assert json.loads(files['openstack/latest/network_data.json']) == {
        'links': [], 'networks': [], 'services': []}
    meta = json.loads(files['openstack/latest/meta_data.json'])
    assert (meta['public_keys'], meta['keys'], meta['meta']) == ({}, [], {})
    assert not any(name.endswith(('user_data', 'user-data'))
                   for name in files)
    assert 'public-keys' not in json.loads(files['ec2/latest/meta-data.json'])


def test_a_rebuild_writes_it_again_and_delete_removes_it(conf):
    path = configdrive.make(conf, 'host-a', INST, _params())
    configdrive.make(conf, 'host-a', INST, _params(user_data=base64.b64encode(
        b'second').decode()))
    files, _ = read(path)
    assert files['openstack/latest/user_data'] == b'second'
    # a task without a drive takes the old one away; one from a conductor
    # that says nothing of drives leaves it
    assert configdrive.make(conf, 'host-a', INST, {}) is None
    assert read(path)[0]
    assert configdrive.make(conf, 'host-a', INST,
                            {'config_drive': False}) is None
    with pytest.raises(FileNotFoundError):
        open(path, 'rb')
    configdrive.remove(conf, 'host-a', UUID)      # idempotent


def test_no_drive_is_written_unless_asked(conf, tmp_path):
    assert configdrive.make(conf, 'host-a', INST, {'config_drive': False}) \
        is None
    assert not (tmp_path / 'agent').exists()


def test_a_driver_that_cannot_attach_a_drive_fails_the_task(conf):
    class OldDriver:
        def spawn(self, uuid, *, name, flavor, image_ref):
            raise AssertionError('must not boot without its drive')

    class Agent:
        driver = OldDriver()
        host = 'host-a'
    Agent.conf = conf
    with pytest.raises(VirtError, match='cannot attach a config drive'):
        tasks._config_drive(Agent, INST, _params(), Agent.driver.spawn)
    assert not os.path.exists(configdrive.path(conf, 'host-a', UUID))
    # a task that says nothing of drives (an older conductor's) needs none
    assert tasks._config_drive(Agent, INST, {}, Agent.driver.spawn) == {}


def test_a_build_that_fails_leaves_no_drive(conf):
    class FailingDriver:
        def spawn(self, uuid, *, name, flavor, image_ref, config_drive=None):
            assert os.path.exists(config_drive)
            raise VirtError('no room')

    class Agent:
        driver = FailingDriver()
        host = 'host-a'
        image_cache = None

        def progress(self, inst, step=None):
            pass
    Agent.conf = conf
    inst = dict(INST, vcpus=1, memory_mb=64, disk_gb=1)
    with pytest.raises(VirtError, match='no room'):
        tasks._build(Agent(), inst, _params())
    assert not os.path.exists(configdrive.path(conf, 'host-a', UUID))
