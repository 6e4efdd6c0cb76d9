"""``tristate-manage``: the operator's offline tool.

    tristate-manage [--config-file F] db sync       # create or upgrade the schema
    tristate-manage [--config-file F] db version    # current and head revision
    tristate-manage [--config-file F] status        # services, up or down; the bus
    tristate-manage actions                          # print the action table
    tristate-manage docs states|reconcile|leases [--output PATH]  # docs/
    tristate-manage [--config-file F] check         # the plane's invariants
    tristate-manage [--config-file F] host list|enable NAME|disable NAME
    tristate-manage catalog --public-url URL [--register]  # Keystone catalog
"""

import datetime
import sys

from oslo_config import cfg

from common import conf as tconf
from common import docs
from common.cmd import manage_catalog
from common.cmd import manage_hosts
from common.cmd import manage_networks
from common.db import api as db_api
from common.db import checks
from common.db import engine
from common.db import migration
from common.db import services as services_mod


def _db_sync(conf):
    database = engine.Database.from_conf(conf)
    migration.upgrade(database)
    print('Database %s is at revision %s.' % (
        database.url.render_as_string(hide_password=True),
        migration.current_revision(database)))


def _db_version(conf):
    database = engine.Database.from_conf(conf)
    print('current: %s\nhead: %s' % (migration.current_revision(database),
                                      migration.head_revision()))


def service_rows(services, *, now, down_after):
    """(rows to print, exit code): 1 when an agent is down or no conductor
    is up (or none ever ran), else 0."""
    rows, code = [], 0
    for svc in services:
        up = now - svc['last_seen'] <= datetime.timedelta(seconds=down_after)
        rows.append((svc['binary'], svc['host'], svc['version'] or '-',
                     svc['started_at'].isoformat(sep=' ', timespec='seconds')
                     if svc['started_at'] else '-',
                     svc['last_seen'].isoformat(sep=' ', timespec='seconds'),
                     'up' if up else 'DOWN'))
        if svc['binary'] == services_mod.AGENT and not up:
            code = 1
    if not any(r[0] == services_mod.CONDUCTOR and r[5] == 'up' for r in rows):
        code = 1
    return rows, code


def _status(conf, clock=db_api.utcnow):
    database = engine.Database.from_conf(conf)
    try:
        found = db_api.StateDB(database).list_services()
    finally:
        database.dispose()
    rows, code = service_rows(found, now=clock(),
                              down_after=conf.conductor.service_down_time)
    header = ('binary', 'host', 'version', 'started (UTC)',
              'last heartbeat (UTC)', 'state')
    widths = [max(len(str(r[i])) for r in [header] + rows)
              for i in range(len(header))]
    for row in [header] + rows:
        cells = zip(row, widths, strict=True)
        print('  '.join(str(v).ljust(w) for v, w in cells).rstrip())
    bus_problem = _bus_status(conf)
    if code:
        print('\nNot healthy: %s.' % ('an agent is down' if any(
            r[0] == services_mod.AGENT and r[5] == 'DOWN' for r in rows)
            else 'no conductor is up'))
    elif bus_problem:
        print('\nNot healthy: the message bus is unreachable.')
    return 1 if bus_problem else code


def _bus_status(conf):
    """Print whether the bus of ``transport_url`` takes a message from this
    host now (one attempt); the problem, or None. A daemon cut off from
    the bus keeps its heartbeat (database) and retries the broker: this
    line tells that case from a healthy plane."""
    from common import rpc
    if conf.transport_url in (None, 'rabbit://'):     # the library's default
        print('\nmessage bus: not configured here (transport_url unset)')
        return None
    bus = rpc.Bus(conf)
    try:
        problem = bus.probe(conf.conductor.topic)
    finally:
        bus.cleanup()
    print('\nmessage bus: %s' % ('UNREACHABLE: %s' % problem if problem else
                                 'reachable (%s)' % rpc.describe_transport(
                                     conf)))
    return problem


def _actions(conf):
    sys.stdout.write(docs.render_table_text())


def _docs(conf):
    text = {'states': docs.render_states_md,
            'reconcile': docs.render_reconcile_md,
            'leases': docs.render_leases_md}[conf.command.page]()
    if conf.command.output:
        with open(conf.command.output, 'w') as out:
            out.write(text)
        print('wrote %s' % conf.command.output)
    else:
        sys.stdout.write(text)


def _check(conf):
    """Print every broken invariant, one a line; exit 1 if any."""
    database = engine.Database.from_conf(conf)
    try:
        found, seen = checks.find_violations(
            database, checks.Limits.from_conf(conf))
    finally:
        database.dispose()
    for violation in found:
        print(violation)
    counted = ', '.join('%d %s' % (n, what) for what, n in seen.items())
    if found:
        print('%d violation(s) found (%s checked).' % (len(found), counted))
        return 1
    print('All invariants hold (%s checked).' % counted)
    return 0


def _add_parsers(subparsers):
    db = subparsers.add_parser('db', help='database schema')
    db_sub = db.add_subparsers(dest='db_command')
    db_sub.required = True
    db_sub.add_parser('sync', help='create or upgrade the schema').set_defaults(
        func=_db_sync)
    db_sub.add_parser('version', help='show the schema revision').set_defaults(
        func=_db_version)
    subparsers.add_parser('actions', help='print the action table').set_defaults(
        func=_actions)
    subparsers.add_parser(
        'status', help='each service, its version and last heartbeat; exits '
        '1 if an agent or every conductor is down').set_defaults(func=_status)
    page = subparsers.add_parser('docs', help='render a generated docs page')
    page.add_argument('page', choices=['states', 'reconcile', 'leases'])
    page.add_argument('--output', help='file to write (default: stdout)')
    page.set_defaults(func=_docs)
    subparsers.add_parser(
        'check', help='check the invariants of the plane\'s database; '
        'exit 1 naming each violation').set_defaults(func=_check)
    manage_hosts.add_parsers(subparsers)
    manage_catalog.add_parsers(subparsers)
    manage_networks.add_parsers(subparsers)


def main(argv=None, conf=None):
    conf = conf or tconf.CONF
    command = cfg.SubCommandOpt('command', title='commands',
                                handler=_add_parsers, help='what to do')
    conf.register_cli_opt(command)
    from common import rpc
    rpc.register_opts(conf)
    try:
        conf(sys.argv[1:] if argv is None else argv, project='tristate')
        return conf.command.func(conf) or 0
    finally:
        conf.reset()
        conf.unregister_opt(command)


if __name__ == '__main__':
    sys.exit(main())
