"""Options of the ``[api]`` group: the REST API tier (``tristate-api``).

Authorization rules are oslo.policy's (defaults in code, ``api/policy.py``;
an operator overrides them in ``[oslo_policy] policy_file``).
"""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('api', title='REST API',
                     help='The Nova-compatible REST API tier (tristate-api).')

opts = [
    cfg.HostAddressOpt('listen', default='0.0.0.0',
                       help='Address tristate-api listens on. Default: '
                            '0.0.0.0 (every IPv4 address).'),
    cfg.PortOpt('port', default=8774,
                help='TCP port tristate-api listens on. Range 0-65535; '
                     'default 8774 (Nova\'s); 0 picks a free port (logged).'),
    cfg.IntOpt('threads', default=16, min=1, max=1024,
               help='Requests served at once (worker threads of the HTTP '
                    'server); more wait in the listen queue. Range 1-1024; '
                    'default 16.'),
    cfg.StrOpt('auth_strategy', default='keystone',
               choices=[('keystone', 'Keystone tokens, checked by '
                                     'keystonemiddleware ([keystone_authtoken])'),
                        ('noauth', 'trusted networks and tests only: '
                                   'X-Auth-Token USER:PROJECT, admin when '
                                   'USER is admin')],
               help='How requests are authenticated. Default: keystone. '
                    'tristate-all uses noauth unless a config file sets '
                    'this option.'),
    cfg.StrOpt('noauth_default_user', default='',
               help='With auth_strategy noauth: the user of a request that '
                    'sends no X-Auth-Token ("admin" makes it an admin). '
                    'Default: empty, which refuses such requests with 401. '
                    'tristate-all sets admin.'),
    cfg.StrOpt('noauth_default_project', default='',
               help='With auth_strategy noauth: the project of a request '
                    'that sends no X-Auth-Token. Default: empty, which means '
                    'the same as noauth_default_user.'),
    cfg.IntOpt('rpc_timeout', default=30, min=1,
               help='Seconds the API waits for a conductor to answer a '
                    'call, or for the message bus to be reachable, before '
                    'answering 503 (with Retry-After; at once while the bus '
                    'stays unreachable). Range >= 1; default 30.'),
    cfg.IntOpt('max_limit', default=1000, min=1,
               help='Most items one list request returns; clients page '
                    'with limit and marker. Range >= 1; default 1000.'),
    cfg.BoolOpt('enable_instance_password', default=True,
                help='Whether create, rebuild and rescue answer with the '
                     'admin password ("adminPass", generated unless the '
                     'request gives one), as Nova\'s option of the same '
                     'name. false: no answer carries one, and none is '
                     'generated at create or rebuild (one the request gives '
                     'still reaches the guest, through its config drive). '
                     'Default: true.'),
    cfg.IntOpt('password_length', default=12, min=8, max=255,
               help='Length of a generated admin password, in '
                    'characters. Range 8-255; default 12.'),
    cfg.IntOpt('max_request_body_size', default=114688, min=1,
               help='Largest request body accepted, in bytes; a larger one '
                    'is refused with 413 before it is read (by its '
                    'Content-Length; a chunked body once it passes the '
                    'limit). Range >= 1; default 114688 (112 KiB, Nova\'s).'),
    cfg.IntOpt('header_timeout', default=10, min=1,
               help='Seconds a client has to send the request line and '
                    'headers, from its first byte; a slower one is answered '
                    '408 and its connection closed, so that clients '
                    'dribbling headers cannot hold the worker threads. '
                    'Range >= 1; default 10.'),
    cfg.IntOpt('body_timeout', default=30, min=1,
               help='Seconds a client has to send the request body once '
                    'its headers are in; a slower one is answered 408. '
                    'Range >= 1; default 30.'),
    cfg.IntOpt('max_connections', default=500, min=0,
               help='Most connections served at once (counted from their '
                    'first request until closed, idle keep-alive ones '
                    'included); more are answered 503 with Retry-After and '
                    'closed. Range >= 0; default 500; 0 means no limit.'),
    cfg.IntOpt('max_connections_per_client', default=0, min=0,
               help='Most connections one client address may hold (as '
                    'max_connections counts them); more are answered 503 '
                    'and closed. Set it below threads when clients connect '
                    'directly; behind a reverse proxy every connection '
                    'comes from the proxy, so leave it 0 or above the '
                    'proxy\'s own limit. Range >= 0; default 0 (no limit).'),
    cfg.StrOpt('link_prefix',
               help='Base URL put in the links of responses, e.g. '
                    'https://compute.example.com, when a proxy in front of '
                    'the API changes it. Default: unset, which means the URL '
                    'the request came to.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
