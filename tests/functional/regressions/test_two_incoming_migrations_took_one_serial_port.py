"""Two live migrations into one host could be given one serial port.

Found in the review of the live migration (issue 25): the destination's
prepare (agent RPC 1.6) chose the guest's serial console TCP port as the
first of ``[serial_console] port_range`` that no domain of the host used;
the guest's domain only appears there once the migration ends, so a
second prepare meanwhile (another migration into the host, or a build
there) chose the same port, and the second guest to arrive could not
listen on it. Fixed: a prepare promises its port under the lock the
builds take theirs with, and every later choice skips the promised
ports until the domain arrives, the move is abandoned, or twice the
migration timeout has passed. Here on libvirt's test:/// driver: two
prepares, then a build, each get their own port; an abandoned move's
port is free again.
"""

import socket
import uuid as uuidlib

import pytest

from common.flavors import Flavor

libvirt = pytest.importorskip('libvirt')

from compute_agent.virt import consolelog  # noqa: E402
from tests.functional.regressions import libvirt_support  # noqa: E402

TINY = Flavor('t', 1, 64, 1)


def _free_ports(count):
    """The first of ``count`` consecutive ports free on 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            first = sock.getsockname()[1]
        if first + count < 65535 and all(
                _bindable(first + i) for i in range(count)):
            return first
    pytest.skip('no %d consecutive free ports' % count)


def _bindable(port):
    with socket.socket() as sock:
        try:
            sock.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


@pytest.fixture
def drv(tmp_path):
    first = _free_ports(3)
    console = consolelog.Settings(enabled=True, listen_address='127.0.0.1',
                                  first_port=first, last_port=first + 2)
    with libvirt_support.started_driver(tmp_path, 'h2', console=console) as drv:
        drv.first_port = first
        yield drv


def _new():
    return str(uuidlib.uuid4())


def test_each_incoming_guest_and_each_build_gets_its_own_port(drv):
    one, two, built = _new(), _new(), _new()
    first = drv.first_port

    ports = [drv.prepare_incoming(u, flavor=TINY, image_ref='img')
             ['serial_tcp'][1] for u in (one, two)]
    drv.spawn(built, name='vm', flavor=TINY, image_ref='img')

    assert ports == [first, first + 1]
    assert drv.console_endpoint(built)['port'] == first + 2
    # the move of ``one`` abandoned: its port is free for the next guest
    drv.abandon_incoming(one)
    three = _new()
    assert drv.prepare_incoming(three, flavor=TINY, image_ref='img')[
        'serial_tcp'][1] == first
