"""Tristate's configuration options, one module per option group.

Options are registered here on import; nothing reads a value at import time.
``CONF`` is the process-wide object the daemons parse their files into; tests
build their own ``cfg.ConfigOpts()`` and call :func:`register_all` on it.
"""

from oslo_config import cfg

from common.conf import api
from common.conf import availability_zone
from common.conf import compute
from common.conf import conductor
from common.conf import database
from common.conf import dhcp
from common.conf import default
from common.conf import fake_driver
from common.conf import image
from common.conf import leases
from common.conf import libvirt
from common.conf import metrics
from common.conf import network
from common.conf import oslo_middleware
from common.conf import quota
from common.conf import reconcile
from common.conf import scheduler
from common.conf import serial_console
from common.conf import shutdown
from common.conf import upgrade_levels

CONF = cfg.CONF

_MODULES = (default, database, conductor, compute, scheduler, upgrade_levels,
            reconcile,
            leases,
            metrics,
            quota,
            api,
            oslo_middleware,
            libvirt,
            image,
            fake_driver,
            serial_console,
            shutdown,
            availability_zone,
            network,
            dhcp)


def register_all(conf):
    for module in _MODULES:
        module.register_opts(conf)


register_all(CONF)
