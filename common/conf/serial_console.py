"""Options of the ``[serial_console]`` group: console logs, serial console
tokens and ``tristate-console-proxy``.

Read by the agents (where a domain's serial console listens and how much of
its log is sent), the conductor (token lifetime), the API tier (the URL
handed out) and the proxy daemon (where it listens, how often it checks
that its sessions' instances still exist). See docs/operator-guide.md,
"Consoles".
"""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('serial_console', title='Consoles',
                     help='Console logs, interactive serial consoles and '
                          'the console proxy (tristate-console-proxy).')

opts = [
    cfg.IntOpt('output_max_bytes', default=102400, min=1024,
               max=16 * 1024 * 1024,
               help='Bytes of a guest\'s console log an agent sends for one '
                    'os-getConsoleOutput (the end of the log; length then '
                    'picks lines from it). Range 1024-16777216; default '
                    '102400 (Nova\'s libvirt driver\'s bound).'),
    cfg.IntOpt('fake_log_max_bytes', default=65536, min=1024,
               help='Fake driver only: bytes a fake guest\'s console log '
                    'grows to before it is rotated (one backup kept, as '
                    'virtlogd keeps max_backups). Range >= 1024; default '
                    '65536.'),
    cfg.BoolOpt('enabled', default=False,
                help='Give each new KVM/QEMU guest an interactive serial '
                     'console: a TCP listener on listen_address, a port of '
                     'port_range, that tristate-console-proxy connects '
                     'to. Default: false (remote-consoles answers 400 '
                     '"not supported").'),
    cfg.StrOpt('listen_address', default='127.0.0.1',
               help='Agents: the address the guests\' serial TCP '
                    'listeners bind to, the host\'s management address '
                    '(the proxy must reach it; never a public address: '
                    'whoever connects types into the guest). Default: '
                    '127.0.0.1 (proxy on the same host only).'),
    cfg.StrOpt('port_range', default='10000:20000',
               regex=r'^\d+:\d+$',
               help='Agents: ports (first:last, both included) the serial '
                    'TCP listeners take, one per guest. Default: '
                    '10000:20000.'),
    cfg.IntOpt('token_ttl', default=600, min=1, max=86400,
               help='Seconds a console URL\'s token can be used (once). '
                    'Range 1-86400; default 600 (Nova\'s).'),
    cfg.URIOpt('base_url', default='ws://127.0.0.1:6083/',
               schemes=['ws', 'wss', 'http', 'https'],
               help='The URL of tristate-console-proxy that clients are '
                    'given, with ?token=... appended. Default: '
                    'ws://127.0.0.1:6083/.'),
    cfg.HostAddressOpt('proxy_host', default='127.0.0.1',
                       help='tristate-console-proxy: the address it listens '
                            'on. Default: 127.0.0.1.'),
    cfg.PortOpt('proxy_port', default=6083,
                help='tristate-console-proxy: the port it listens on. '
                     'Default: 6083.'),
    cfg.FloatOpt('session_check_interval', default=2.0, min=0.05,
                 max=300.0,
                 help='tristate-console-proxy: seconds between two checks '
                      'with the conductor that each open session\'s '
                      'instance still exists; a session whose instance '
                      'was deleted is closed at the next check. Range '
                      '0.05-300; default 2.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
