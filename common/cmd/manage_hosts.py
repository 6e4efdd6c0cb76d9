"""``tristate-manage host``: list the hosts, enable or disable one.

    tristate-manage [--config-file F] host list
    tristate-manage [--config-file F] host enable NAME
    tristate-manage [--config-file F] host disable NAME [--reason TEXT]

A disabled host takes no new build or move (what runs there stays); a host
forced down (``PUT /os-services``, admins) is shown as such; with
``[scheduler] enable_new_hosts = false`` every host registers disabled at
its agent's first heartbeat and waits here for an admin.
"""

from common import exception
from common.db import api as db_api
from common.db import engine


def _with_db(conf, fn):
    database = engine.Database.from_conf(conf)
    try:
        return fn(db_api.StateDB(database))
    finally:
        database.dispose()


def _list(conf):
    hosts = _with_db(conf, lambda statedb: statedb.list_hosts())
    header = ('host', 'enabled', 'forced down', 'last heartbeat (UTC)',
              'disabled reason')
    rows = [(h['name'], 'yes' if h['enabled'] else 'NO',
             'YES' if h['forced_down'] else 'no',
             h['last_heartbeat'].isoformat(sep=' ', timespec='seconds')
             if h['last_heartbeat'] else '-', h['disabled_reason'] or '')
            for h in hosts]
    widths = [max(len(r[i]) for r in [header] + rows)
              for i in range(len(header))]
    for row in [header] + rows:
        print('  '.join(v.ljust(w) for v, w in zip(row, widths,
                                                    strict=True)).rstrip())


def _set(conf, enabled):
    name = conf.command.host_name
    reason = None if enabled else (conf.command.reason or 'disabled by an '
                                   'admin')
    try:
        _with_db(conf, lambda statedb: statedb.set_host_enabled(
            name, enabled, reason))
    except exception.HostNotFound:
        print('No host %s: a host exists once its agent has sent a '
              'heartbeat (tristate-manage host list).' % name)
        return 1
    print('Host %s %s.' % (name, 'enabled' if enabled else
                           'disabled (%s)' % reason))
    return 0


def add_parsers(subparsers):
    host = subparsers.add_parser('host', help='list, enable or disable the '
                                 'hosts the scheduler may use')
    sub = host.add_subparsers(dest='host_command')
    sub.required = True
    sub.add_parser('list', help='every host, enabled or not').set_defaults(
        func=_list)
    enable = sub.add_parser('enable', help='let the scheduler use a host')
    enable.add_argument('host_name', metavar='NAME')
    enable.set_defaults(func=lambda conf: _set(conf, True))
    disable = sub.add_parser('disable', help='take a host out of scheduling '
                             '(what runs there stays)')
    disable.add_argument('host_name', metavar='NAME')
    disable.add_argument('--reason', help='shown to admins with the host')
    disable.set_defaults(func=lambda conf: _set(conf, False))
