"""What every Tristate daemon does the same way: parse its configuration,
set up logging, run until SIGTERM or SIGINT, then stop cleanly."""

import signal
import sys
import threading

from oslo_log import log as oslo_log

from common import conf as tconf
from common import context as tcontext
from common import rpc


def prepare(argv, *, conf=None, cli_opts=(), description=None):
    """Register options, parse ``argv`` and config files, set up logging."""
    conf = conf or tconf.CONF
    tcontext.set_log_defaults()
    oslo_log.register_options(conf)
    rpc.register_opts(conf)
    for opt in cli_opts:
        conf.register_cli_opt(opt)
    conf(sys.argv[1:] if argv is None else argv, project='tristate',
         description=description)
    oslo_log.setup(conf, 'tristate')
    return conf


def wait_for_signal():
    """Block until SIGTERM or SIGINT."""
    stop = threading.Event()

    def handler(signum, frame):
        stop.set()
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    while not stop.wait(1.0):
        pass
