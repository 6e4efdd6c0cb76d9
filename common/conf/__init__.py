"""Tristate's configuration options, one module per option group.

Options are registered here on import; nothing reads a value at import time.
``CONF`` is the process-wide object the daemons parse their files into; tests
build their own ``cfg.ConfigOpts()`` and call :func:`register_all` on it.
"""

from oslo_config import cfg

from common.conf import database
from common.conf import default

CONF = cfg.CONF

_MODULES = (default, database)


def register_all(conf):
    for module in _MODULES:
        module.register_opts(conf)


register_all(CONF)
