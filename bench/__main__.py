"""``python -m bench [--json-out FILE] [--tiny] [SCENARIO [OPTIONS]]``.

Without a scenario every one runs at full size, one after the other; a
scenario that fails is reported (a JSON line with ``error``) and the others
still run; the exit status is then 1. ``--tiny`` runs each at the tiny size
CI uses.
"""

import argparse
import sys
import traceback

from bench import core
from bench import scenarios


def _parser():
    names = ', '.join(scenarios.ALL)
    parser = argparse.ArgumentParser(
        prog='python -m bench', description='Tristate benchmarks (issue 8). '
        'Scenarios: %s. `python -m bench SCENARIO --help` lists the options '
        'of one.' % names)
    parser.add_argument('--json-out', metavar='FILE',
                        help='also append the JSON lines to FILE')
    parser.add_argument('--tiny', action='store_true',
                        help='tiny sizes (what CI runs): seconds, not minutes')
    parser.add_argument('scenario', nargs='?', choices=list(scenarios.ALL),
                        metavar='SCENARIO', help='one of: %s' % names)
    parser.add_argument('options', nargs=argparse.REMAINDER,
                        help='options of the scenario (its sizes)')
    return parser


def run_one(name, argv, out):
    """Run scenario ``name`` with its options ``argv``; False if it failed."""
    module = scenarios.ALL[name]
    sub = argparse.ArgumentParser(
        prog='python -m bench %s' % name, description=module.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(sub)
    try:
        out.add(module.run(sub.parse_args(argv)))
    except Exception as err:
        traceback.print_exc()
        out.error(name, '%s: %s' % (type(err).__name__, err))
        return False
    return True


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    args = parser.parse_args(argv)
    out = core.Output(json_out=args.json_out)
    out.header()
    if args.scenario:
        names = [args.scenario]
        option_argv = {args.scenario: args.options}
    else:
        names = list(scenarios.ALL)
        option_argv = {}
    ok = True
    for name in names:
        argv_of = option_argv.get(name, [])
        if args.tiny:
            argv_of = scenarios.ALL[name].TINY + argv_of
        ok = run_one(name, argv_of, out) and ok
    out.finish()
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
