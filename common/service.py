"""What every Tristate daemon does the same way: parse its configuration,
set up logging, run until SIGTERM or SIGINT, then stop cleanly."""

import re
import signal
import sys
import threading

from oslo_config import cfg
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
    problems = config_problems(conf)
    if problems:
        # Before anything starts: a bad value found later would stop a
        # daemon in the middle of its work.
        sys.exit('%s: invalid configuration, nothing was started:\n%s'
                 % (conf.prog or 'tristate', '\n'.join(
                     '  ' + p for p in problems)))
    oslo_log.setup(conf, 'tristate')
    return conf


def config_problems(conf):
    """Every option whose value does not parse or is out of range, every
    required option left unset, and RabbitMQ TLS settings that cannot work
    (:func:`common.rpc.tls_problems`): ``[group] name: why`` (the why names
    the file or path and what was expected)."""
    problems = []
    for key in sorted(conf):
        if isinstance(getattr(conf, key, None), cfg.ConfigOpts.GroupAttr):
            problems.extend(_group_problems(conf, key))
        else:
            problems.extend(_read(conf, 'DEFAULT', key, conf))
    return problems + rpc.tls_problems(conf)


def _group_problems(conf, group):
    values = getattr(conf, group)
    for name in sorted(values):
        yield from _read(conf, group, name, values)


def _read(conf, group, name, values):
    try:
        getattr(values, name)
    except (cfg.ConfigFileValueError, cfg.RequiredOptError,
            ValueError) as err:
        # oslo.config names the file as LocationInfo(...): keep the path.
        why = re.sub(r"LocationInfo\(location=<[^>]*>, detail='([^']*)'\)",
                     r'\1', str(err))
        return ['[%s] %s: %s' % (group, name, why)]
    except cfg.Error:
        return []       # e.g. a deprecated alias: not a value of ours
    return []


def wait_for_signal():
    """Block until SIGTERM or SIGINT."""
    stop = threading.Event()

    def handler(signum, frame):
        stop.set()
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    while not stop.wait(1.0):
        pass
