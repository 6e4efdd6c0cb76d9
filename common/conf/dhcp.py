"""Options of the ``[dhcp]`` group: the compute agent's per-host DHCP.

Read by :func:`compute_agent.net.dhcp.from_conf` only. (``[network]`` is
the conductor's: networks as data.)
"""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('dhcp', title='Per-host DHCP',
                     help='The compute agent\'s DHCP for its own guests: one '
                          'dnsmasq per Linux bridge that has guests on this '
                          'host, in a network namespace of its own joined to '
                          'the bridge by a veth pair, answering only the MAC '
                          'addresses of this host\'s instances with their '
                          'fixed address (no dynamic range). Needs root or '
                          'CAP_NET_ADMIN + CAP_SYS_ADMIN (see the operator '
                          'guide, "Networks").')

opts = [
    cfg.BoolOpt('enabled', default=False,
                help='Run the DHCP service for the ports of this host\'s '
                     'instances that are on a Linux bridge (ports on a '
                     'libvirt network get libvirt\'s DHCP, if its network '
                     'has one). Default: false (guests then configure '
                     'themselves, e.g. from the config drive).'),
    cfg.StrOpt('dnsmasq_path', default='dnsmasq',
               help='The dnsmasq program (Debian: dnsmasq-base), a path or '
                    'a name looked up in PATH. Default: dnsmasq.'),
    cfg.StrOpt('ip_path', default='ip',
               help='The iproute2 ip program, a path or a name looked up '
                    'in PATH. Default: ip.'),
    cfg.StrOpt('state_path', default='$state_dir/dhcp',
               help='Directory of the DHCP service\'s files: one '
                    'sub-directory per bridge (dnsmasq\'s configuration, '
                    'host and option files, pid file and log). Default: '
                    '$state_dir/dhcp.'),
    cfg.StrOpt('dnsmasq_user', default='nobody',
               help='The user dnsmasq runs as once it has opened its '
                    'sockets (dnsmasq --user; it keeps only the '
                    'capabilities DHCP needs). Empty: dnsmasq\'s own '
                    'default. Default: nobody.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
