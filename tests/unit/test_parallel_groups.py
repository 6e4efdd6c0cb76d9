"""The suite's parallel run (tests/conftest.py): which tests share a
worker, and which servers a worker uses."""

import pathlib
import re

from tests import conftest

TESTS = pathlib.Path(conftest.__file__).parent
# What makes a module use the host itself: a real QEMU guest (through the
# system libvirtd), a network namespace or bridge of its own.
USES_HOST = re.compile(r'qemu_support|qemu_plane|TRISTATE_TEST_LIBVIRT_URI|'
                       r"'netns'")
# Modules that name those only in what they hand a recording fake (the
# command runner of compute_agent.net.dhcp), never running them.
FAKES_HOST = {'tests/unit/compute_agent/test_dhcp.py'}


def test_every_module_that_uses_the_host_runs_in_the_host_group():
    found = [path for path in sorted(TESTS.rglob('test_*.py'))
             if USES_HOST.search(path.read_text())
             and path.name != pathlib.Path(__file__).name
             and path.relative_to(TESTS.parent).as_posix() not in FAKES_HOST]
    assert found, 'no module boots QEMU: the search is wrong'
    for path in found:
        nodeid = '%s::test_x' % path.relative_to(TESTS.parent).as_posix()
        assert conftest.scope_of(nodeid) == 'host', nodeid


def test_other_modules_run_whole_and_apart():
    assert conftest.scope_of('tests/unit/test_metrics.py::test_a[x]') == (
        'tests/unit/test_metrics.py')
    assert conftest.scope_of('tests/unit/test_metrics.py::C::test_b') == (
        'tests/unit/test_metrics.py')


def test_a_second_worker_uses_its_own_servers():
    environ = {'PYTEST_XDIST_WORKER': 'gw1',
               'TRISTATE_TEST_PG_URL': 'postgresql://a',
               'TRISTATE_TEST_W1_PG_URL': 'postgresql://b',
               'TRISTATE_TEST_W1_RABBIT_CTL': 'ctl b'}
    conftest._worker_services(environ)
    assert environ['TRISTATE_TEST_PG_URL'] == 'postgresql://b'
    assert environ['TRISTATE_TEST_RABBIT_CTL'] == 'ctl b'
    first = {'PYTEST_XDIST_WORKER': 'gw0', 'TRISTATE_TEST_PG_URL': 'a',
             'TRISTATE_TEST_W1_PG_URL': 'b'}
    conftest._worker_services(first)
    assert first['TRISTATE_TEST_PG_URL'] == 'a'


def test_a_second_worker_without_servers_of_its_own_stops():
    environ = {'PYTEST_XDIST_WORKER': 'gw1',
               'TRISTATE_TEST_RABBIT_URL': 'rabbit://a'}
    try:
        conftest._worker_services(environ)
    except SystemExit as stop:
        assert 'TRISTATE_TEST_W1_' in str(stop)
    else:
        raise AssertionError('gw1 would share gw0\'s broker')
