"""What every Tristate daemon does the same way: parse its configuration,
set up logging, run until SIGTERM or SIGINT, then stop cleanly, within
``[DEFAULT] graceful_shutdown_timeout`` whatever it waits for.

The signal handlers are installed by :func:`prepare`, before anything that
may wait on the broker or the database starts, so a daemon that cannot
reach them still stops on SIGTERM (a second signal exits at once)."""

import gc
import logging
import os
import re
import signal
import sys
import threading
import time

from oslo_config import cfg
from oslo_log import log as oslo_log

from common import affinity
from common import conf as tconf
from common import confcheck
from common import context as tcontext
from common import rpc
from common.conf import shutdown

LOG = logging.getLogger(__name__)


def prepare(argv, *, conf=None, cli_opts=(), description=None,
            requires=()):
    """Register options, parse ``argv`` and config files, refuse to start
    on any problem (``requires``: the optional packages the daemon may
    need, keys of :data:`common.confcheck.REQUIRES`), set up logging, warn
    about options and sections nothing reads."""
    conf = conf or tconf.CONF
    tcontext.set_log_defaults()
    oslo_log.register_options(conf)
    rpc.register_opts(conf)
    for opt in cli_opts:
        conf.register_cli_opt(opt)
    conf(sys.argv[1:] if argv is None else argv, project='tristate',
         description=description)
    _refuse(conf, config_problems(conf) + confcheck.dependency_problems(
        conf, requires))
    # Before any thread starts: each one inherits the CPU.
    pinned = affinity.apply(conf)
    SIGNALS.install()
    oslo_log.setup(conf, 'tristate')
    for line in confcheck.unknown_options(conf):
        LOG.warning('Configuration: %s', line)
    if pinned:
        LOG.info('Every thread of this process runs on CPU %d '
                 '([DEFAULT] pin_to_cpu)', conf.pin_to_cpu)
    return conf


def check_requires(conf, requires):
    """Exit as :func:`prepare` does if an optional package ``requires``
    names is missing: for a choice made after it (a command-line override)."""
    _refuse(conf, confcheck.dependency_problems(conf, requires))


def _refuse(conf, problems):
    if problems:
        # Before anything starts: a bad value found later would stop a
        # daemon in the middle of its work.
        sys.exit('%s: invalid configuration, nothing was started:\n%s'
                 % (conf.prog or 'tristate', '\n'.join(
                     '  ' + p for p in problems)))


def config_problems(conf):
    """Every option whose value does not parse or is out of range, every
    required option left unset, values Tristate parses itself
    (:func:`common.confcheck.value_problems`) and RabbitMQ TLS settings
    that cannot work (:func:`common.rpc.tls_problems`): ``[group] name:
    why`` (the why names the file or path and what was expected)."""
    problems = []
    for key in sorted(conf):
        if isinstance(getattr(conf, key, None), cfg.ConfigOpts.GroupAttr):
            problems.extend(_group_problems(conf, key))
        else:
            problems.extend(_read(conf, 'DEFAULT', key, conf))
    return (problems + confcheck.value_problems(conf)
            + rpc.transport_problems(conf) + rpc.tls_problems(conf)
            + affinity.problems(conf))


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


class Signals:
    """SIGTERM and SIGINT: the first asks the daemon to stop, a second
    exits at once (status 1)."""

    def __init__(self):
        self.stop = threading.Event()

    def install(self):
        self.stop.clear()
        signal.signal(signal.SIGTERM, self._handler)
        signal.signal(signal.SIGINT, self._handler)

    def _handler(self, signum, frame):
        if self.stop.is_set():
            LOG.warning('Signal %d again while stopping: exiting now', signum)
            os._exit(1)
        LOG.info('Signal %d: stopping', signum)
        self.stop.set()

    def wait(self, timeout=None):
        """True once a stop was asked; waits at most ``timeout`` s."""
        return self.stop.wait(timeout)


SIGNALS = Signals()


def grace(conf, binary):
    """Seconds ``binary`` may take to stop: ``[DEFAULT]
    graceful_shutdown_timeout``, else the daemon's own default."""
    return conf.graceful_shutdown_timeout or shutdown.DEFAULTS[binary]


def exit_after(seconds, what):
    """From now on, ``what`` has ``seconds`` to stop: then a daemon thread
    logs the threads still running and ends the process (status 1), even
    while the interpreter waits for them at exit."""
    def watch():
        time.sleep(seconds)
        left = sorted(t.name for t in threading.enumerate()
                      if t is not threading.current_thread())
        LOG.error('%s did not stop within %d s of the signal (threads still '
                  'running: %s); exiting now', what, seconds, ', '.join(left))
        for handler in logging.getLogger().handlers:
            handler.flush()
        os._exit(1)
    threading.Thread(target=watch, daemon=True, name='stop-watchdog').start()


def freeze_startup_objects():
    """Keep what the daemon made while it started (its modules, tables,
    compiled statements, configuration: some 200,000 objects) out of the
    cyclic garbage collector's full collections for good, as they live as
    long as the process: otherwise each full collection, every few
    hundred builds under load, walks them all (100-200 ms of CPU on a
    small machine, about 1 ms a build). Garbage is collected first, so
    only live objects are frozen; objects made later are collected as
    usual. :func:`thaw` undoes it (a process that starts and stops
    several planes, as the benchmarks do)."""
    gc.collect()
    gc.freeze()


def thaw():
    """Give the objects :func:`freeze_startup_objects` froze back to the
    collector (a plane that stops leaves them to be collected)."""
    gc.unfreeze()


def wait_for_signal(conf=None, binary=None):
    """Block until SIGTERM or SIGINT; then, for a daemon (``binary`` given),
    start the :func:`exit_after` watchdog of its grace period. What the
    daemon made until then is frozen (:func:`freeze_startup_objects`)."""
    freeze_startup_objects()
    while not SIGNALS.wait(1.0):
        pass
    if binary is not None:
        exit_after(grace(conf, binary), binary)
