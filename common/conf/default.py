"""Options of the ``[DEFAULT]`` group: identity of this process and its files."""

import os
import socket

from oslo_config import cfg

opts = [
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<the machine\'s hostname>',
               help='Name of this host as the control plane knows it. A '
                    'compute agent reports capacity and domains under this '
                    'name and receives the tasks sent to it. Default: the '
                    'machine\'s hostname. Must be unique among agents.'),
    cfg.StrOpt('state_dir',
               default=os.path.join(os.path.expanduser('~'), '.tristate'),
               sample_default='~/.tristate',
               help='Directory holding local state: the SQLite database of '
                    'the embedded setup and the fake hypervisor\'s domain '
                    'files. Default: ~/.tristate. Created when missing.'),
    cfg.IntOpt('pin_to_cpu', min=0,
               help='Run every thread of this daemon on this one CPU (its '
                    'number, as in /proc/cpuinfo). A daemon runs Python on '
                    'one core at a time (the interpreter lock), and its '
                    'threads hand that lock to each other hundreds of times '
                    'a build: on a virtual machine, hand-overs between '
                    'threads on different CPUs cost cross-CPU wake-ups, and '
                    'pinning made the embedded plane\'s builds about a '
                    'third cheaper (see the operator guide, "Pinning a '
                    'daemon to a CPU"). Give each pinned daemon of a host a '
                    'CPU of its own. Default: unset, the kernel places the '
                    'threads. A CPU this process may not run on stops the '
                    'start.'),
    cfg.BoolOpt('use_pending_state', default=False,
                help='When no host can take a new instance, bury it as '
                     'PENDING (an external service may free resources and '
                     'rebuild it, or reset it to ERROR) instead of ERROR. '
                     'Seed 004. Default: false.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
