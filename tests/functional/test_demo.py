"""README command 1: ``tristate-all --demo`` shows the control plane at work.

Run as its own process, as the README runs it: the builds reach ACTIVE, the
table refuses what it does not allow, a guest shutdown is reconciled to
stopped, and a hard delete with the agent down is cleaned up later.
"""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def test_demo_shows_every_promise(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO)
    out = subprocess.run(
        [sys.executable, '-c', 'import sys; from conductor.cmd.all import main;'
         ' sys.exit(main())', '--hosts', '3', '--state-dir', str(tmp_path),
         '--demo', '--log-file', str(tmp_path / 'tristate.log')],
        capture_output=True, text=True, timeout=120, env=env, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert text.count(' active ') >= 3, text
    assert 'refused: Cannot unpause instance' in text, text
    assert 'web2   stopped' in text, text
    assert 'the guest shut itself down' in text, text
    assert 'hard_deleted' in text, text
    assert 'leftover domain of db1 destroyed' in text, text
