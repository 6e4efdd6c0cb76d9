"""``tristate-manage``: the operator's offline tool.

    tristate-manage [--config-file F] db sync       # create or upgrade the schema
    tristate-manage [--config-file F] db version    # current and head revision
    tristate-manage actions                          # print the action table
    tristate-manage docs states|reconcile|leases [--output PATH]  # docs/
    tristate-manage [--config-file F] check         # the plane's invariants
"""

import sys

from oslo_config import cfg

from common import conf as tconf
from common import docs
from common.db import api as db_api
from common.db import checks
from common.db import engine
from common.db import migration


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
            database, checks.Limits.from_conf(conf, db_api.utcnow()))
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
    page = subparsers.add_parser('docs', help='render a generated docs page')
    page.add_argument('page', choices=['states', 'reconcile', 'leases'])
    page.add_argument('--output', help='file to write (default: stdout)')
    page.set_defaults(func=_docs)
    subparsers.add_parser(
        'check', help='check the invariants of the plane\'s database; '
        'exit 1 naming each violation').set_defaults(func=_check)


def main(argv=None, conf=None):
    conf = conf or tconf.CONF
    command = cfg.SubCommandOpt('command', title='commands',
                                handler=_add_parsers, help='what to do')
    conf.register_cli_opt(command)
    try:
        conf(sys.argv[1:] if argv is None else argv, project='tristate')
        return conf.command.func(conf) or 0
    finally:
        conf.reset()
        conf.unregister_opt(command)


if __name__ == '__main__':
    sys.exit(main())
