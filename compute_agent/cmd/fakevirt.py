"""``tristate-fakevirt``: act on the fake hypervisor from outside.

Does to a fake host's domains what a guest or a host admin would do behind
the control plane's back, so the agents' watchers and reconcile can be seen
at work. Changes the hypervisor only, never the database::

    tristate-fakevirt [--config-file F] [--state-dir D] list
    tristate-fakevirt ... guest-shutdown UUID   # SHUTDOWN, reason guest
    tristate-fakevirt ... crash UUID            # CRASHED, reason crashed
    tristate-fakevirt ... vanish UUID           # the domain disappears
    tristate-fakevirt ... start UUID            # RUNNING, started by hand
    tristate-fakevirt ... fault HOST OP MODE [--count N]
    tristate-fakevirt ... clear-faults HOST

It reads the same files as the daemons: ``[DEFAULT] state_dir`` from the
config files, or ``--state-dir``, which wins. Exit status 0 on success (one
line saying what changed), 1 on an error (a message on stderr).
"""

import sys

from oslo_config import cfg

from common import states
from common.conf import default
from common.conf import fake_driver
from compute_agent.virt import fake

# Outside actions on one domain: (power_state, reason) they leave.
OUTSIDE_ACTIONS = {
    'guest-shutdown': (states.power.SHUTDOWN, states.REASON_GUEST),
    'crash': (states.power.CRASHED, states.REASON_CRASHED),
    'start': (states.power.RUNNING, None),
}
_COLUMNS = ('HOST', 'UUID', 'NAME', 'POWER', 'REASON', 'FLAVOR')


class CommandError(Exception):
    """What the user did wrong or asked for that is not there."""


def _find(state_dir, uuid):
    host = fake.find_host(state_dir, uuid)
    if host is None:
        raise CommandError('no domain %s on any fake host under %s'
                           % (uuid, fake.store_dir(state_dir)))
    return fake.HostStore(state_dir, host)


def _outside(state_dir, args):
    store = _find(state_dir, args.domain_uuid)
    power_state, reason = OUTSIDE_ACTIONS[args.name]
    store.set_power(args.domain_uuid, power_state, reason, by=args.name)
    return 'domain %s on host %s is now %s (reason %s)' % (
        args.domain_uuid, store.host, states.power_state_name(power_state), reason)


def _vanish(state_dir, args):
    store = _find(state_dir, args.domain_uuid)
    store.remove(args.domain_uuid)
    return 'domain %s vanished from host %s' % (args.domain_uuid, store.host)


def _list(state_dir, args):
    rows, faults = [_COLUMNS], []
    for host in fake.list_hosts(state_dir):
        data = fake.HostStore(state_dir, host).read()
        for uuid, rec in sorted(data['domains'].items()):
            rows.append((host, uuid, rec['name'],
                         states.power_state_name(rec['power_state']),
                         rec['reason'] or '-', rec['flavor']['name']))
        for operation, fault in sorted(data['faults'].items()):
            faults.append('fault on %s: %s %s (remaining %s)' % (
                host, operation, fault['mode'],
                'always' if fault['remaining'] is None else fault['remaining']))
    return '\n'.join(_table(rows) + faults)


def _table(rows):
    columns = zip(*rows, strict=True)
    widths = [max(len(str(cell)) for cell in column) for column in columns]
    return ['  '.join(str(cell).ljust(width)
                      for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def _fault(state_dir, args):
    store = fake.HostStore(state_dir, args.fake_host)
    store.set_fault(args.operation, args.mode, count=args.count)
    times = 'always' if args.count is None else '%d time(s)' % args.count
    return 'host %s: %s will %s %s' % (args.fake_host, args.operation,
                                       args.mode, times)


def _clear_faults(state_dir, args):
    cleared = fake.HostStore(state_dir, args.fake_host).clear_faults()
    return 'host %s: %d fault(s) cleared' % (args.fake_host, cleared)


def _add_parsers(subparsers):
    # Sub-command arguments share oslo.config's namespace with the options:
    # hence dests like fake_host, which cannot meet [DEFAULT] host.
    subparsers.add_parser('list', help='every domain of every fake host'
                          ).set_defaults(func=_list)
    for name, (power_state, reason) in OUTSIDE_ACTIONS.items():
        parser = subparsers.add_parser(name, help='set the domain %s (%s)' % (
            states.power_state_name(power_state), reason or 'no reason'))
        parser.add_argument('domain_uuid', metavar='UUID')
        parser.set_defaults(func=_outside)
    parser = subparsers.add_parser('vanish', help='remove the domain')
    parser.add_argument('domain_uuid', metavar='UUID')
    parser.set_defaults(func=_vanish)
    parser = subparsers.add_parser('fault', help='make an operation fail')
    parser.add_argument('fake_host', metavar='HOST')
    parser.add_argument('operation', choices=fake.OPERATIONS)
    parser.add_argument('mode', choices=fake.FAULT_MODES)
    parser.add_argument('--count', type=int, default=None,
                        help='fire this many times (default: always)')
    parser.set_defaults(func=_fault)
    parser = subparsers.add_parser('clear-faults', help='remove every fault '
                                   'of a host; hung operations give up')
    parser.add_argument('fake_host', metavar='HOST')
    parser.set_defaults(func=_clear_faults)


def _build_conf():
    conf = cfg.ConfigOpts()
    default.register_opts(conf)
    fake_driver.register_opts(conf)
    # Its own dest: [DEFAULT] state_dir already owns 'state_dir'.
    conf.register_cli_opt(cfg.StrOpt(
        'state-dir', dest='cli_state_dir', metavar='DIR',
        help='Directory holding fakevirt/<host>/. Default: [DEFAULT] '
             'state_dir of the config files.'))
    conf.register_cli_opt(cfg.SubCommandOpt(
        'command', title='commands', handler=_add_parsers,
        help='what to do'))
    return conf


def main(argv=None):
    """Run one command; return the exit status."""
    conf = _build_conf()
    conf(sys.argv[1:] if argv is None else argv, project='tristate',
         prog='tristate-fakevirt')
    state_dir = conf.cli_state_dir or conf.state_dir
    try:
        print(conf.command.func(state_dir, conf.command))
    except (CommandError, ValueError, fake.VirtError) as exc:
        print('tristate-fakevirt: %s' % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
