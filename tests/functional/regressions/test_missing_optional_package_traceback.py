"""A missing optional package ended a daemon in a traceback.

``tristate-conductor`` with a PostgreSQL URL and no ``psycopg2``, or
``tristate-compute-agent`` with the libvirt driver and no ``libvirt``
module, died at the first use with a Python traceback that did not say
what to install (issue 20, item 14). Fixed: each daemon checks the
optional packages its configuration needs before it starts anything
(:data:`common.confcheck.REQUIRES`) and exits with one line naming the pip
package (and the Tristate extra) to install. Here the module is hidden
from the daemon's process (``sys.modules[name] = None``).
"""

import subprocess
import sys

import pytest

from tests import daemon_support
from tests import support


def _run(tmp_path, binary, hidden, sections):
    path = tmp_path / 'tristate.conf'
    sections.setdefault('DEFAULT', {})['state_dir'] = tmp_path
    sections['DEFAULT']['transport_url'] = daemon_support.closed_url(
        support.free_port())
    path.write_text(daemon_support.ini(sections))
    code = ('import sys; sys.modules[%r] = None; from %s import main; '
            'sys.exit(main())' % (hidden, daemon_support.MAINS[binary]))
    return subprocess.run(
        [sys.executable, '-c', code, '--config-file', str(path)],
        capture_output=True, text=True, timeout=120, check=False,
        cwd=daemon_support.SOURCE_ROOT)


@pytest.mark.parametrize('binary, hidden, sections, expected', [
    ('tristate-conductor', 'psycopg2',
     {'database': {'connection': 'postgresql+psycopg2://u:p@127.0.0.1/t'}},
     ['[database] connection', 'psycopg2', 'pip install psycopg2-binary',
      'tristate[postgresql]']),
    ('tristate-api', 'psycopg2',
     {'database': {'connection': 'postgresql+psycopg2://u:p@127.0.0.1/t'}},
     ['[database] connection', 'pip install psycopg2-binary']),
    ('tristate-compute-agent', 'libvirt', {'compute': {'driver': 'libvirt'}},
     ['[compute] driver', 'pip install libvirt-python', 'tristate[libvirt]']),
    ('tristate-api', 'keystonemiddleware', {'api': {
        'auth_strategy': 'keystone'}},
     ['[api] auth_strategy', 'pip install keystonemiddleware']),
])
def test_one_line_naming_the_package_not_a_traceback(tmp_path, binary,
                                                     hidden, sections,
                                                     expected):
    done = _run(tmp_path, binary, hidden, sections)
    assert done.returncode == 1, (done.returncode, done.stderr[-3000:])
    assert 'Traceback' not in done.stderr, done.stderr[-3000:]
    problems = [line for line in done.stderr.splitlines()
                if line.startswith('  [')]
    assert len(problems) == 1, done.stderr
    for words in expected:
        assert words in problems[0], problems[0]
    assert 'u:p@' not in done.stderr        # never the password


def test_tristate_all_with_the_libvirt_driver_chosen_on_its_command_line(
        tmp_path):
    code = ("import sys; sys.modules['libvirt'] = None; "
            "from conductor.cmd.all import main; sys.exit(main())")
    done = subprocess.run(
        [sys.executable, '-c', code, '--state-dir', str(tmp_path),
         '--driver', 'libvirt'], capture_output=True, text=True,
        timeout=120, check=False, cwd=daemon_support.SOURCE_ROOT)
    assert done.returncode == 1, done.stderr[-3000:]
    assert 'Traceback' not in done.stderr, done.stderr[-3000:]
    assert 'pip install libvirt-python' in done.stderr
