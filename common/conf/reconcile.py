"""Options of the ``[reconcile]`` group: how the conductor answers what the
hypervisor reports (the rules themselves are data: common/reconcile.py)."""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('reconcile', title='Reconcile',
                     help='Power-state reconcile (DESIGN.md section 5).')

opts = [
    cfg.IntOpt('crash_restart_limit', default=3, min=0,
               help='Restarts of a crashed guest allowed within '
                    'crash_restart_window under the "restart" crash policy; '
                    'the next crash sets ERROR with the reason. Range >= 0; '
                    'default 3; 0 means a crash always sets ERROR.'),
    cfg.IntOpt('crash_restart_window', default=600, min=1,
               help='Seconds over which crash restarts are counted. Range '
                    '>= 1; default 600.'),
    cfg.StrOpt('orphan_action', default='log',
               choices=['log', 'stop', 'destroy'],
               help='What an agent does with a domain on its host that no '
                    'instance owns, once orphan_grace has passed: log it, '
                    'stop it, or destroy it. Default: log. A domain of a '
                    'hard-deleted instance is destroyed whatever this says; '
                    'one of a live instance placed on another host (a '
                    'renamed host) is never an orphan.'),
    cfg.IntOpt('orphan_grace', default=300, min=0,
               help='Seconds a domain must stay unowned before orphan_action '
                    'applies, so that a build in flight is never touched. '
                    'Range >= 0; default 300; 0 acts at the first report.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
