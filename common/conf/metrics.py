"""Options of the ``[metrics]`` group: the Prometheus endpoint of each daemon."""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('metrics', title='Metrics',
                     help='Prometheus metrics (see docs/operator-guide.md).')

opts = [
    cfg.BoolOpt('enabled', default=None,
                help='Serve Prometheus metrics. The API serves them at '
                     '/metrics on its own port; a conductor or a compute '
                     'agent on host:port below. Default: unset, which means '
                     'on for the API and the conductors and off for the '
                     'compute agents.'),
    cfg.HostAddressOpt('host', default='0.0.0.0',
                       help='Address the metrics endpoint of a conductor or '
                            'an agent listens on (not the API\'s). Default: '
                            '0.0.0.0 (every address).'),
    cfg.PortOpt('port', default=9180,
                help='TCP port of the metrics endpoint of a conductor or an '
                     'agent (not the API\'s), 0 to 65535. Default: 9180. 0 '
                     'means a free port chosen at start (logged).'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
