"""The serial console of KVM/QEMU domains (issue 24): logged to a file per
instance, a TCP listener from ``[serial_console] port_range`` when enabled,
both kept through a regenerated definition; Xen keeps its pty."""

import random
import socket

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from compute_agent.virt import consolelog  # noqa: E402
from compute_agent.virt.libvirt import config  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402


def xml(virt_type='kvm', **kwargs):
    return config.domain_xml(virt_type=virt_type, uuid=new_uuid(), name='vm',
                             flavor=TINY, image_ref='cirros',
                             disks=[('/i/disk', 'qcow2')], **kwargs)


def test_the_serial_console_is_logged_to_a_file():
    text = xml(console_log="/i/it's/console.log")
    assert '<log file="/i/it\'s/console.log" append=\'on\'/>' in text
    assert "<serial type='pty'>" in text and "<console type='pty'/>" in text
    assert config.serial_tcp_of(text) is None


def test_a_tcp_serial_listens_and_is_logged():
    text = xml(console_log='/i/console.log', serial_tcp=('10.0.0.5', 10007))
    assert "<serial type='tcp'>" in text
    assert "<log file=\"/i/console.log\" append='on'/>" in text
    assert config.serial_tcp_of(text) == ('10.0.0.5', 10007)


def test_xen_keeps_its_pty_without_a_log():
    text = xml('xen', console_log='/i/console.log',
               serial_tcp=('10.0.0.5', 10007))
    assert '<log ' not in text and "<serial type='pty'/>" in text


def _settings(port, enabled=True):
    return consolelog.Settings(enabled=enabled, listen_address='127.0.0.1',
                               first_port=port, last_port=port + 2)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _three_free_ports():
    """A first port whose next two are free too, below the kernel's
    ephemeral range (where other tests' connections take ports at random);
    bounded: 50 tries."""
    rng = random.Random()
    for _ in range(50):
        first = rng.randrange(20000, 32000)
        socks = [socket.socket() for _ in range(3)]
        try:
            for offset, sock in enumerate(socks):
                sock.bind(('127.0.0.1', first + offset))
            return first
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise AssertionError('no three consecutive free ports in 50 tries')


def test_spawn_defines_a_logged_tcp_serial_on_a_free_port(make_driver):
    first = _three_free_ports()
    drv = make_driver(console=_settings(first))
    one, two = new_uuid(), new_uuid()
    with socket.socket() as taken:     # something else holds the 2nd port
        taken.bind(('127.0.0.1', first + 1))
        drv.spawn(one, name='a', flavor=TINY, image_ref='cirros')
        drv.spawn(two, name='b', flavor=TINY, image_ref='cirros')
    assert drv.console_endpoint(one) == {'host': '127.0.0.1', 'port': first}
    assert drv.console_endpoint(two) == {'host': '127.0.0.1',
                                         'port': first + 2}
    # a regenerated definition keeps its port and its log
    drv.resize(one, flavor=TINY)
    assert drv.console_endpoint(one)['port'] == first
    xml_text = drv.connection.run(
        lambda conn: conn.lookupByUUIDString(one).XMLDesc(0))
    assert drv._files(one).console_log in xml_text


def test_without_consoles_there_is_no_endpoint(make_driver):
    drv = make_driver(console=_settings(_free_port(), enabled=False))
    uuid = new_uuid()
    drv.spawn(uuid, name='a', flavor=TINY, image_ref='cirros')
    assert drv.console_endpoint(uuid) is None


def test_console_output_reads_the_log_until_the_instance_is_destroyed(
        make_driver):
    drv = make_driver()
    uuid = new_uuid()
    drv.spawn(uuid, name='a', flavor=TINY, image_ref='cirros')
    assert drv.get_console_output(uuid, max_bytes=100) is None
    path = drv._files(uuid).console_log
    with open(path, 'wb') as f:
        f.write(b'BOOT-OK\n')
    drv.power_off(uuid)
    assert drv.get_console_output(uuid, max_bytes=100) == b'BOOT-OK\n'
    drv.destroy(uuid)
    assert drv.get_console_output(uuid, max_bytes=100) is None


# --- consolelog ---------------------------------------------------------------------

def test_tail_reads_the_newest_backup_when_the_file_is_short(tmp_path):
    path = str(tmp_path / 'console.log')
    assert consolelog.tail(path, 10) is None
    (tmp_path / 'console.log.1').write_bytes(b'oldest')
    (tmp_path / 'console.log.0').write_bytes(b'0123456789')
    (tmp_path / 'console.log').write_bytes(b'abc')
    assert consolelog.tail(path, 2) == b'bc'
    assert consolelog.tail(path, 8) == b'56789abc'
    assert consolelog.tail(path, 100) == b'0123456789abc'
    consolelog.remove(path)
    assert list(tmp_path.iterdir()) == []


def test_append_rotates_at_the_bound(tmp_path):
    path = str(tmp_path / 'console.log')
    for i in range(10):
        consolelog.append(path, 'line %d\n' % i, max_bytes=1024)
    consolelog.append(path, 'x' * 1020 + '\n', max_bytes=1024)
    assert (tmp_path / 'console.log.0').read_text().startswith('line 0')
    assert (tmp_path / 'console.log').read_text() == 'x' * 1020 + '\n'


@pytest.mark.parametrize('text', ['0:10', '10:9', '1:65536', 'a:b'])
def test_a_bad_port_range_is_refused(text):
    with pytest.raises(ValueError):
        consolelog.port_range(text)
