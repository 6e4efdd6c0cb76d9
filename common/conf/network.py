"""Options of the ``[network]`` group: guest networking (issue 23).

Read by the conductor when it allocates a new server's ports: the networks
themselves are data (``tristate network create``, the API at microversion
2.101, ``tristate-manage network create``), not configuration.
"""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('network', title='Guest networking',
                     help='How a new server is given ports and addresses '
                          'on the networks an admin defined.')

opts = [
    cfg.StrOpt('default_network', default=None,
               help='Name or id of the network a server created with '
                    'networks "auto" (or, before microversion 2.37, '
                    'without networks) is plugged into. Default: unset, '
                    'which means the one network the project can use '
                    '(its own or shared); none when there is none, and '
                    'a 409 asking for a network id when there are '
                    'several.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group.name: opts}
