"""Figures, statistics and output shared by every scenario.

A :class:`Figure` is one measured number with its unit, its target (as a
comparison, so ``met`` is computed, never typed in) and the 1-minute load
average when it was taken: the machine may be shared, and a figure taken
under load says so.
"""

import argparse
import contextlib
import dataclasses
import json
import os
import socket
import statistics
import subprocess
import time

# comparison -> (predicate, how it reads)
_OPS = {
    '<=': (lambda value, bound: value <= bound, '≤'),
    '<': (lambda value, bound: value < bound, '<'),
    '>=': (lambda value, bound: value >= bound, '≥'),
    '==': (lambda value, bound: value == bound, '='),
}


def loadavg():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return -1.0


@dataclasses.dataclass
class Figure:
    scenario: str
    metric: str
    value: float
    unit: str
    op: str | None = None           # a key of _OPS, None: no target
    bound: float | None = None
    size: str = ''
    note: str = ''
    load: float = dataclasses.field(default_factory=loadavg)

    @property
    def met(self):
        if self.op is None:
            return None
        return bool(_OPS[self.op][0](self.value, self.bound))

    @property
    def target(self):
        if self.op is None:
            return ''
        return '%s %s %s' % (_OPS[self.op][1], _fmt(self.bound), self.unit)

    def as_json(self):
        out = dataclasses.asdict(self)
        out.update(target=self.target, met=self.met)
        return out


def _fmt(value):
    if isinstance(value, float) and not value.is_integer():
        return '%.3g' % value if abs(value) < 100 else '%.0f' % value
    return '%d' % value


def median(values):
    return statistics.median(values) if values else float('nan')


def positive_int(text):
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            'expected a whole number of at least 1, got %r' % text)
    return value


def add_rounds(parser, default=3):
    """The ``--rounds`` option of a scenario whose figures are medians over
    repeated runs (the issue's "medians over repeated runs")."""
    parser.add_argument('--rounds', type=positive_int, default=default,
                        help='times the scenario runs, each on a fresh '
                             'plane; its figures are the medians (default '
                             '%d)' % default)


def rounds_note(values, fmt='%.0f'):
    """How a median over rounds came about: every round's value, in the
    order they ran."""
    if len(values) == 1:
        return 'one round'
    return 'median of %d rounds: %s' % (
        len(values), ', '.join(fmt % value for value in values))


def percentile(values, pct):
    """The ``pct`` percentile (nearest rank) of ``values``."""
    if not values:
        return float('nan')
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1,
                      int(round(pct / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[rank]


def wait_for(predicate, *, timeout, what, interval=0.001):
    """Poll ``predicate`` until it returns something true; return it.
    Raises TimeoutError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError('%s did not happen within %.0f s'
                               % (what, timeout))
        time.sleep(interval)


def _cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return 'unknown'


def reference_ms(repeat=5):
    """CPU milliseconds of one fixed pure-Python workload (JSON, dicts,
    sorting: the kind of work a request does), the median of ``repeat``:
    how fast this machine runs Python now. Figures of two runs compare
    only as far as their references do; a virtual machine's speed moves
    with its host's load."""
    doc = {'uuid': '0' * 36, 'power_state': 1, 'reason': None,
           'seq': 1795609104740305200, 'tags': list(range(20))}
    times = []
    for _ in range(repeat):
        started = time.process_time()
        for n in range(2000):
            text = json.dumps([dict(doc, n=n)] * 4)
            rows = json.loads(text)
            sorted(rows, key=lambda row: (row['n'], row['seq']))
        times.append((time.process_time() - started) * 1e3)
    return round(median(times), 2)


def listening(port, host='127.0.0.1'):
    """Whether something accepts connections on ``host``:``port`` now."""
    with contextlib.suppress(OSError), socket.create_connection(
            (host, port), timeout=1):
        return True
    return False


def machine():
    """What the figures were taken on, and how fast it ran Python then
    (:func:`reference_ms`)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        commit = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=root,
                                capture_output=True, text=True,
                                check=False).stdout.strip()
    except OSError:
        commit = ''
    return {'cpus': os.cpu_count(), 'cpu_model': _cpu_model(),
            'reference_ms': reference_ms(), 'commit': commit or 'unknown',
            'date': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'load': loadavg()}


def table(figures):
    """The figures as an aligned text table."""
    rows = [('scenario', 'metric', 'value', 'target', 'met', 'load', 'size')]
    for fig in figures:
        met = {None: '-', True: 'met', False: 'NOT met'}[fig.met]
        rows.append((fig.scenario, fig.metric,
                     '%s %s' % (_fmt(round(fig.value, 3)), fig.unit),
                     fig.target, met, '%.1f' % fig.load, fig.size))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return '\n'.join('  '.join(str(cell).ljust(width)
                               for cell, width in zip(row, widths, strict=True)
                               ).rstrip() for row in rows)


class Output:
    """Prints figures as they come (JSON lines) and a table at the end."""

    def __init__(self, json_out=None, stream=None):
        self.figures = []
        self.json_out = json_out
        self.stream = stream

    def _print(self, text):
        print(text, file=self.stream, flush=True)

    def header(self):
        self._print(json.dumps({'machine': machine()}))

    def add(self, figures):
        for fig in figures:
            self.figures.append(fig)
            line = json.dumps(fig.as_json(), sort_keys=True)
            self._print(line)
            if self.json_out:
                with open(self.json_out, 'a') as f:
                    f.write(line + '\n')

    def error(self, scenario, err):
        line = json.dumps({'scenario': scenario, 'error': str(err)})
        self._print(line)
        if self.json_out:
            with open(self.json_out, 'a') as f:
                f.write(line + '\n')

    def finish(self):
        self._print('')
        self._print(table(self.figures))
