"""Options of the ``[upgrade_levels]`` group: RPC version caps for rolling
upgrades. While old and new services run side by side, cap the new ones at
the version the old ones understand; remove the cap when all are upgraded."""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('upgrade_levels', title='RPC version caps')

opts = [
    cfg.StrOpt('conductor',
               help='Highest conductor RPC API version to send, e.g. 1.0. '
                    'Default: unset, the newest this code knows.'),
    cfg.StrOpt('compute',
               help='Highest compute agent RPC API version to send, e.g. '
                    '1.0. Default: unset, the newest this code knows.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
