"""Every benchmark scenario once, at its tiny size, so that none can rot.

The figures are not compared with the targets here (that is what
``python -m bench`` and bench/RESULTS.md are for): a scenario must run and
produce well-formed figures. Scenarios on RabbitMQ and PostgreSQL need
``TRISTATE_TEST_RABBIT_URL`` and ``TRISTATE_TEST_PG_URL`` (skipped without,
failed when ``CI=true``), as the integration tests do.
"""

import argparse
import json
import logging
import math
import os
import shutil
import socket

import pytest

from bench import core
from bench import scenarios
from tests import support

NEEDS_SERVICES = {'burst_rabbit', 'reports', 'memory', 'conductors'}


@pytest.fixture(autouse=True)
def _logging_left_as_found():
    """The scenarios quieten Tristate's loggers for their own output
    (bench.plane.quiet_logs); later tests in this process need them back."""
    names = ['', 'oslo_messaging', 'kombu', 'amqp', 'cheroot', 'werkzeug',
             'api', 'conductor', 'compute_agent', 'common']
    levels = {name: logging.getLogger(name).level for name in names}
    handlers = list(logging.getLogger().handlers)
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)


def _run(module):
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return module.run(parser.parse_args(module.TINY))


def _need_services(name):
    if name not in NEEDS_SERVICES:
        return
    if os.environ.get('TRISTATE_TEST_RABBIT_URL') and os.environ.get(
            'TRISTATE_TEST_PG_URL'):
        return
    reason = ('scenario %s needs TRISTATE_TEST_RABBIT_URL and '
              'TRISTATE_TEST_PG_URL (tools/test-services.sh)' % name)
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs RabbitMQ and PostgreSQL: ' + reason,
                    pytrace=False)
    pytest.skip(reason)


@pytest.mark.parametrize('name', list(scenarios.ALL))
def test_scenario_runs_and_gives_figures(name):
    if name in ('shutdown_libvirt', 'image_cached_build'):
        pytest.importorskip('libvirt')
    if name == 'image_cached_build' and shutil.which('qemu-img') is None:
        pytest.skip('image_cached_build needs qemu-img (qemu-utils)')
    _need_services(name)
    figures = _run(scenarios.ALL[name])
    assert figures, 'scenario %s produced no figure' % name
    for fig in figures:
        assert isinstance(fig, core.Figure)
        assert fig.scenario == name
        assert fig.metric and fig.unit
        assert math.isfinite(fig.value) and fig.value >= 0, fig
        assert fig.met in (None, True, False)
        assert (fig.op is None) == (fig.bound is None), fig
        record = json.loads(json.dumps(fig.as_json()))
        assert record['value'] == fig.value


def test_every_scenario_is_in_the_table_order():
    assert list(scenarios.ALL) == [
        'build_one', 'burst', 'delete', 'burst_rabbit', 'shutdown',
        'shutdown_libvirt', 'reports', 'scheduler', 'conflicts', 'memory',
        'image_transfer', 'image_cached_build', 'server_list', 'conductors']


def test_output_prints_a_table_and_json_lines(tmp_path, capsys):
    out = core.Output(json_out=str(tmp_path / 'figures.jsonl'))
    out.add([core.Figure('s', 'm', 12.5, 'ms', '<=', 20, size='tiny')])
    out.finish()
    printed = capsys.readouterr().out
    assert json.loads(printed.splitlines()[0])['met'] is True
    assert 'met' in printed.splitlines()[-1]
    lines = (tmp_path / 'figures.jsonl').read_text().splitlines()
    assert json.loads(lines[0])['target'] == '≤ 20 ms'


def test_the_header_says_what_machine_and_how_fast_it_ran(capsys):
    core.Output().header()
    seen = json.loads(capsys.readouterr().out)['machine']
    assert seen['cpus'] == os.cpu_count()
    assert seen['cpu_model'] and seen['commit']
    # the reference workload's CPU time: a real measurement, not a constant
    assert 0 < seen['reference_ms'] < 60000


def test_options_after_the_scenario_reach_it(capsys):
    from bench import __main__ as cli
    assert cli.main(['--tiny', 'scheduler', '--hosts', '7']) == 0
    first = capsys.readouterr().out.splitlines()[1]
    assert json.loads(first)['size'].startswith('7 hosts')


@pytest.mark.parametrize('text', ['0', '-2', 'two', ''])
def test_rounds_must_be_a_whole_number_of_at_least_one(text):
    parser = argparse.ArgumentParser()
    core.add_rounds(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(['--rounds', text])
    assert parser.parse_args(['--rounds', '4']).rounds == 4


def test_a_median_over_rounds_says_every_round():
    assert core.rounds_note([150.0, 171.4, 160.2]) == (
        'median of 3 rounds: 150, 171, 160')
    assert core.rounds_note([150.0]) == 'one round'


def test_burst_figures_are_medians_over_its_rounds(monkeypatch):
    """Each size runs once per round on a fresh plane, alternating which
    goes first; the rates are the medians and the ratio compares them."""
    from bench import burst
    seconds = {8: iter([0.10, 0.08, 0.40]), 16: iter([0.20, 0.16, 0.12])}
    order = []
    planes = _fake_planes(monkeypatch, burst)

    def fake_burst(plane, count, clients, tag, *, child):
        assert child        # the clients post from a child process
        order.append(count)
        return next(seconds[count])
    monkeypatch.setattr(burst, 'burst', fake_burst)
    parser = argparse.ArgumentParser()
    burst.add_arguments(parser)
    monkeypatch.setattr(burst, '_counting_creates', lambda plane: [0.001])
    small, cpu_small, creates, big, cpu_big, _creates, ratio, per_round = (
        burst.run(parser.parse_args(['--builds', '8', '--big', '16',
                                     '--rounds', '3'])))
    assert order == [8, 16, 16, 8, 8, 16]
    assert all(options['pin'] for options in planes)   # one CPU each
    assert small.value == pytest.approx(80.0)      # rates 80, 100, 20
    assert big.value == pytest.approx(100.0)       # rates 80, 100, 133
    assert small.note == 'median of 3 rounds: 80, 100, 20'
    assert ratio.value == pytest.approx(0.8)       # of the median rates
    assert ratio.met is True
    # per round: 80/80, 100/100, 20/133, without a target
    assert per_round.value == pytest.approx(1.0)
    assert per_round.note == 'median of 3 rounds: 1.000, 1.000, 0.150'
    assert per_round.op is None
    # the process's CPU per build in each burst, without a target
    assert cpu_small.unit == cpu_big.unit == 'ms' and cpu_small.op is None
    assert cpu_small.note.startswith('median of 3 rounds: ')
    # the conductor's CPU per create call, in ms
    assert creates.value == pytest.approx(1.0) and creates.op is None


def test_conductor_cpu_is_read_from_proc_stat():
    """The conductors scenario reads a process's CPU seconds from
    /proc/PID/stat: this process's, read so, moves with os.times()."""
    from bench import conductors
    before, times = conductors.cpu_seconds(os.getpid()), os.times()
    sum(i * i for i in range(2_000_000))        # some CPU
    spent = conductors.cpu_seconds(os.getpid()) - before
    expected = sum(os.times()[:2]) - sum(times[:2])
    assert spent > 0
    assert abs(spent - expected) <= 0.05 + 0.1 * expected


def test_conductors_figures_per_build_and_ratio(monkeypatch):
    """One and two conductors alternate; rates, the ratio and the CPU per
    build (all conductors, and each one's share) are medians."""
    from bench import conductors
    rounds = iter([(1, 2.0, {'conductor1': 4.0}),
                   (2, 1.0, {'conductor1': 3.0, 'conductor2': 2.0}),
                   (2, 2.0, {'conductor1': 2.0, 'conductor2': 2.0}),
                   (1, 4.0, {'conductor1': 2.0})])

    def one_round(args, rabbit, server, count):
        expected, seconds, used = next(rounds)
        assert count == expected
        return seconds, used, {name: 0.25 for name in used}
    monkeypatch.setattr(conductors, 'one_round', one_round)
    monkeypatch.setattr(conductors.services, 'broker_and_server',
                        lambda: _Both(('rabbit', 'pg')))
    parser = argparse.ArgumentParser()
    conductors.add_arguments(parser)
    one, two, ratio, cpu1, cpu2, net, idle, share = conductors.run(
        parser.parse_args(['--builds', '100', '--rounds', '2']))
    assert (one.value, two.value) == (37.5, 75.0)   # 50 & 25, 100 & 50
    assert ratio.value == pytest.approx(2.0) and ratio.met is True
    assert cpu1.value == pytest.approx(30.0)        # ms: 40 and 20
    assert cpu2.value == pytest.approx(45.0)        # ms: 50 and 40
    assert share.value == pytest.approx(20.0)       # ms: 30, 20, 20, 20
    # less 0.25 s/s per conductor over the burst: ms 35, 10; 45, 30
    assert net.value == pytest.approx(32.5)
    assert idle.value == pytest.approx(250.0)


class _Both:
    def __init__(self, value):
        self.value = value

    def __enter__(self):
        return self.value

    def __exit__(self, *exc):
        return False


def test_a_peak_of_memory_is_read_and_reset(tmp_path):
    """The image scenarios read a process's peak RSS and start a new peak
    before each transfer; a buffer held and freed shows in the peak, and
    not after the reset."""
    from bench import imagedata
    if not imagedata.reset_peak():
        pytest.skip('/proc/self/clear_refs is not writable here')
    before = imagedata.peak_rss_mb()        # the RSS now: a new peak
    held = bytearray(64 * 1024 * 1024)
    for i in range(0, len(held), 4096):
        held[i] = 1
    assert imagedata.peak_rss_mb() >= before + 60
    del held
    assert imagedata.reset_peak()
    assert imagedata.peak_rss_mb() < before + 30


def test_random_sources_have_their_size_and_go_away():
    from bench import imagedata
    with imagedata.source_files([1, 3]) as paths:
        assert {size: os.path.getsize(path) for size, path in paths.items()} \
            == {1: imagedata.MIB, 3: 3 * imagedata.MIB}
        with open(paths[1], 'rb') as f:
            assert len(set(f.read(4096))) > 64        # not zeros: random
    assert not any(os.path.exists(path) for path in paths.values())


def _fake_planes(monkeypatch, burst):
    """``burst``'s planes replaced by ones that do nothing; the options
    each was made with."""
    made = []

    class Plane:
        def __init__(self, hosts, **options):
            made.append(options)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
    monkeypatch.setattr(burst.plane_mod, 'Plane', Plane)
    return made


def test_burst_clients_here_and_unpinned_run_as_before(monkeypatch):
    """--clients-here posts from this process, --unpinned leaves the
    plane on every CPU."""
    from bench import burst
    children = []
    planes = _fake_planes(monkeypatch, burst)

    def fake_burst(plane, count, clients, tag, *, child):
        children.append(child)
        return 0.1
    monkeypatch.setattr(burst, 'burst', fake_burst)
    monkeypatch.setattr(burst, '_counting_creates', lambda plane: [0.001])
    parser = argparse.ArgumentParser()
    burst.add_arguments(parser)
    burst.run(parser.parse_args(['--builds', '8', '--big', '0', '--rounds',
                                 '1', '--clients-here', '--unpinned']))
    assert children == [False]
    assert [options['pin'] for options in planes] == [False]


def test_child_clients_report_a_failed_post():
    """The child process's clients say why a create failed (here: no API
    listens on the port), and the parent raises it."""
    from bench import clients
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]     # bound, not listening: refused
        with pytest.raises(RuntimeError) as err:
            with clients.ClientProcess('127.0.0.1', port, 2, token='t',
                                       flavor='f', image='i') as posting:
                posting.create('x', 3, timeout=30)
    assert 'bench client' in str(err.value)
    assert 'ConnectionRefused' in str(err.value)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason='one CPU')
def test_a_bench_plane_runs_on_one_cpu_and_gives_the_others_back():
    """As tristate-all with [DEFAULT] pin_to_cpu: the plane's threads on
    the process's last CPU while it runs, every CPU again after it; the
    clients' child process on every CPU."""
    from bench import plane as plane_mod
    allowed = os.sched_getaffinity(0)
    with plane_mod.Plane(hosts=1) as plane:
        assert support.thread_cpus() == {frozenset({max(allowed)})}
        assert plane.client_process(1).args[-2:] == [
            '--cpus', ','.join(str(c) for c in sorted(allowed))]
    assert support.thread_cpus() == {frozenset(allowed)}


def test_a_plane_that_fails_to_start_stops_and_gives_every_cpu_back(
        monkeypatch):
    from bench import plane as plane_mod
    allowed = os.sched_getaffinity(0)

    def broken(conf, statedb):
        raise RuntimeError('no image today')
    monkeypatch.setattr(plane_mod.imagedata, 'register_image', broken)
    plane = plane_mod.Plane(hosts=1)
    with pytest.raises(RuntimeError, match='no image today'):
        with plane:
            pass
    assert support.thread_cpus() == {frozenset(allowed)}
    assert not os.path.exists(plane.tmp)
    assert plane.fake_tmp is None or not os.path.exists(plane.fake_tmp)
