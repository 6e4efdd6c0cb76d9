"""A libvirt driver on the ``test:///`` hypervisor, for the regression
tests of the libvirt driver (one node of 4 CPUs and 4 GiB, an image store
with one 512-byte image ``img``).

The regression tests are functional: they cannot reach the unit suite's
fixtures (``tests/unit/compute_agent/libvirt/conftest.py``), so the few
that drive the driver directly share this one set-up."""

import contextlib

from compute_agent.virt.libvirt import LibvirtDriver
from compute_agent.virt.libvirt.disks import LocalImages

NODE = '<node><cpu><mhz>2000</mhz><model>x86_64</model><active>4</active>' \
       '<max>4</max><nodes>1</nodes><sockets>1</sockets><cores>4</cores>' \
       '<threads>1</threads></cpu><memory>4194304</memory></node>'


@contextlib.contextmanager
def started_driver(tmp_path, host, **options):
    """A started driver for ``host`` (``options`` as LibvirtDriver's),
    cleaned up on exit."""
    node = tmp_path / 'node.xml'
    node.write_text(NODE)
    images = tmp_path / 'images'
    images.mkdir()
    (images / 'img').write_bytes(b'x' * 512)
    drv = LibvirtDriver(uri='test://%s' % node, images=LocalImages(images),
                        instances_path=str(tmp_path / 'instances'),
                        event_debounce=0.05, shutdown_timeout=1, **options)
    drv.init_host(host)
    try:
        yield drv
    finally:
        drv.cleanup_host()
