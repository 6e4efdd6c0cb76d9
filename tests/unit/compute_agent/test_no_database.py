"""The compute agent has no database access: it does not even load the
database code (SQLAlchemy alone is ~10 MB of the agent's memory target)."""

import subprocess
import sys


def test_the_agent_daemon_loads_no_database_code():
    code = ('import sys, compute_agent.cmd.agent; '
            'print(sorted(m for m in sys.modules if m == "sqlalchemy" '
            'or m.startswith(("sqlalchemy.", "common.db", "alembic"))))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == '[]'
