"""Issue 24 on real QEMU: a guest of the test image built with a key pair's
public key, user data and a config drive (the build task's guest access,
as the conductor sends it) is logged into over SSH (the image's dropbear)
with the private key, from the network namespace that holds its gateway,
and the file its user data wrote is read back.

The bridge, namespace, dnsmasq and agent are those of
:mod:`tests.functional.test_networks_on_real_qemu` (a privileged libvirtd,
``TRISTATE_TEST_LIBVIRT_URI``; the conductor a stub). Skipped, with the
reason, without it, root, iproute2, dnsmasq, busybox or an ``ssh`` client
(a failure with ``CI=true``). Every wait is bounded; everything made is
removed whatever happens.
"""

import base64
import contextlib
import os
import shutil
import subprocess
import time
import uuid as uuidlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from common import context
from compute_agent import manager as manager_mod
from compute_agent.net import dhcp
from tests.functional import qemu_plane
from tests.functional import qemu_support
from tests.functional import test_networks_on_real_qemu as net_test
from tests.unit.compute_agent.port_data import network
from tests.unit.compute_agent.port_data import port

libvirt = pytest.importorskip('libvirt')

BOOT_TIMEOUT = net_test.BOOT_TIMEOUT
USER_DATA = b'#!/bin/sh\necho "written by user data" >/run/marker\n'


def _keys(directory):
    """(the private key's file, the public key's OpenSSH line)."""
    key = ed25519.Ed25519PrivateKey.generate()
    path = os.path.join(directory, 'id_ed25519')
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), 'wb') as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.OpenSSH,
                                  serialization.NoEncryption()))
    return path, key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()


def _ssh(ns, key, address, command):
    """``command`` run over SSH as root on ``address`` from ``ns``: the
    finished process."""
    return subprocess.run(
        ['ip', 'netns', 'exec', ns, 'ssh', '-i', key, '-o', 'BatchMode=yes',
         '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
         '-o', 'ConnectTimeout=5', '-o', 'LogLevel=ERROR',
         'root@' + address, command],
        capture_output=True, text=True, timeout=60, check=False)


def _logged_in(ns, key, address, console, drv, uuid):
    """What ``cat /run/marker`` printed over SSH, once the guest lets us
    in (its dropbear starts after its DHCP and config drive steps)."""
    deadline = time.monotonic() + BOOT_TIMEOUT
    while True:
        done = _ssh(ns, key, address, 'cat /run/marker; echo $((6*7))')
        if done.returncode == 0:
            return done.stdout
        console.poll()
        assert time.monotonic() < deadline, (
            'no SSH login to %s within %.0f s: %s\nconsole:\n%s\n%s' % (
                address, BOOT_TIMEOUT, done.stderr, console.text,
                net_test._logged(drv, uuid)))  # noqa: SLF001
        time.sleep(2)


def test_ssh_into_the_guest_with_its_key_pair():
    uri = net_test._require()  # noqa: SLF001
    if shutil.which('ssh') is None:
        qemu_plane.skip_or_fail('not installed: ssh (Debian: openssh-client)')
    from compute_agent.virt.libvirt import LibvirtDriver
    from compute_agent.virt.libvirt.disks import LocalImages

    tag = uuidlib.uuid4().hex[:6]
    host = 'sshq-' + tag
    libvirt.registerErrorHandler(lambda *args: None, None)
    with qemu_support.qemu_dir() as directory, \
            net_test._l2(tag) as (bridge, ns), \
            contextlib.ExitStack() as stack:  # noqa: SLF001
        images = os.path.join(directory, 'images')
        os.mkdir(images)
        os.chmod(images, 0o755)
        built = qemu_support.build_test_image(directory, 'qcow2')
        os.rename(built, os.path.join(images, 'test-image'))
        drv = LibvirtDriver(uri=uri, virt_type='qemu',
                            instances_path=os.path.join(directory, 'inst'),
                            images=LocalImages(images), shutdown_timeout=5)
        drv.init_host(host)
        stack.callback(drv.cleanup_host)
        service = dhcp.HostDhcp(host=host,
                                path=os.path.join(directory, 'dhcp'))
        stack.callback(service.stop_all)
        conductor = net_test._Conductor()  # noqa: SLF001
        agent = manager_mod.AgentManager(
            host=host, driver=drv, conductor=conductor,
            conf=net_test._conf(directory),  # noqa: SLF001
            journal=net_test._Journal(), dhcp=service)  # noqa: SLF001
        key, public = _keys(directory)
        net = network('guests', bridge=bridge, cidr='10.78.0.0/24',
                      gateway=net_test.GATEWAY, dns=(net_test.GATEWAY,))
        uuid = str(uuidlib.uuid4())
        stack.callback(drv.destroy, uuid)
        ports = [port(1, address='10.78.0.%d', net=net)]
        agent.run_task(
            context.RequestContext(task_id='build-' + tag),
            net_test._instance(uuid, 'sshguest'), 'build',  # noqa: SLF001
            {'ports': ports, 'key_name': 'e2e', 'key_data': public,
             'user_data': base64.b64encode(USER_DATA).decode(),
             'config_drive': True,
             'config_drive_meta': {'hostname': 'sshguest'}})
        result = conductor.wait('build-' + tag)
        assert result[0] == 'finished', result
        dom = drv.connection.run(lambda conn: conn.lookupByUUIDString(uuid))
        console = qemu_support.SerialConsole(dom)
        stack.callback(console.close)
        address = ports[0]['fixed_ips'][0]['address']
        out = _logged_in(ns, key, address, console, drv, uuid)
        assert out.split('\n')[:2] == ['written by user data', '42'], out
        # a key it was not given is refused
        other, _ = _keys(os.path.join(directory, 'images'))
        assert _ssh(ns, other, address, 'true').returncode != 0
