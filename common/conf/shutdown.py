"""Option of the ``[DEFAULT]`` group for stopping a daemon: how long a
SIGTERM may take before the process exits anyway.

Kept apart from :mod:`common.conf.default` because its default differs per
daemon: each is a few seconds under the ``TimeoutStopSec`` of its systemd
unit (etc/systemd), so that systemd never has to SIGKILL it.
"""

from oslo_config import cfg

# Seconds, per daemon, when the option is unset (TimeoutStopSec minus 5).
DEFAULTS = {'tristate-api': 25, 'tristate-conductor': 55,
            'tristate-compute-agent': 85}

opts = [
    cfg.IntOpt('graceful_shutdown_timeout', min=1,
               sample_default='<25 for tristate-api, 55 for '
                              'tristate-conductor, 85 for '
                              'tristate-compute-agent>',
               help='Seconds a daemon may take to stop after SIGTERM or '
                    'SIGINT (finishing requests and tasks, closing the '
                    'bus); after that it logs what it was waiting for and '
                    'exits with status 1. A second signal exits at once. '
                    'Range >= 1. Default: unset, which means 5 s under the '
                    'TimeoutStopSec of the daemon\'s systemd unit: 25 for '
                    'tristate-api, 55 for tristate-conductor, 85 for '
                    'tristate-compute-agent. Keep it under TimeoutStopSec.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
