"""Summarise a py-spy profile: where the CPU went, per function.

    py-spy record --format raw --rate 200 -o prof.txt -- \\
        python -m bench burst --builds 200 --big 0
    python -m bench.profile prof.txt [--top 25] [--match tristate]

``--format raw`` writes collapsed stacks (``frame;frame;... count``), idle
threads left out. Prints the functions with the most samples on the stack
(inclusive) and at the top of it (self), as shares of every sample.
"""

import argparse
import collections
import re
import sys

_LINE = re.compile(r'^(?P<stack>.*) (?P<count>\d+)$')


def _function(frame):
    # "name (path/to/file.py:123)" -> "name (file.py)"
    name, _, where = frame.partition(' (')
    path = where.rstrip(')').rsplit(':', 1)[0]
    parts = path.split('/')
    return '%s (%s)' % (name, '/'.join(parts[-2:]))


def summarise(lines):
    inclusive, own = collections.Counter(), collections.Counter()
    total = 0
    for line in lines:
        match = _LINE.match(line.strip())
        if not match:
            continue
        count = int(match['count'])
        frames = [_function(f) for f in match['stack'].split(';') if f]
        frames = [f for f in frames if not f.startswith('process ')
                  and not f.startswith('thread ')]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    return total, inclusive, own


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.profile')
    parser.add_argument('path')
    parser.add_argument('--top', type=int, default=25)
    parser.add_argument('--match', default='',
                        help='only functions whose text contains this')
    args = parser.parse_args(argv)
    with open(args.path) as f:
        total, inclusive, own = summarise(f)
    if not total:
        print('no samples')
        return 1
    for title, counter in (('inclusive', inclusive), ('self', own)):
        print('%s (of %d samples):' % (title, total))
        shown = [(k, v) for k, v in counter.most_common()
                 if args.match in k][:args.top]
        for func, count in shown:
            print('  %5.1f %%  %s' % (100.0 * count / total, func))
    return 0


if __name__ == '__main__':
    sys.exit(main())
