"""Services and their heartbeats (the ``services`` table), for
``tristate-manage status``: conductors write their own row from their
periodic loop; a conductor writes an agent's when it receives the agent's
heartbeat."""

import sqlalchemy as sa

from common.db import models
from common.db import prepared
from common.db import quotas
from common.db.prepared import bind

S = models.Service.__table__
CONDUCTOR = 'tristate-conductor'
AGENT = 'tristate-compute-agent'


# A known service's beat, built once (started_at kept when not given).
BEAT = prepared.Prepared(sa.update(S).where(
    S.c.binary == bind('binary', S.c.binary.type),
    S.c.host == bind('host', S.c.host.type),
).values(version=bind('version', S.c.version.type),
         last_seen=bind('now', S.c.last_seen.type),
         started_at=sa.func.coalesce(bind('started_at', S.c.started_at.type),
                                     S.c.started_at)))


def beat(conn, *, binary, host, version, started_at, now):
    if not beat_known(conn, binary=binary, host=host, version=version,
                      now=now, started_at=started_at):
        insert_beat(conn, binary=binary, host=host, version=version,
                    now=now, started_at=started_at)


def beat_known(conn, *, binary, host, version, started_at, now, **_):
    """The UPDATE of a known service's row: how many it found (0 or 1).
    Ignores the other values of a heartbeat (``hosts.beat_values``)."""
    return BEAT.run(conn, binary=binary, host=host, version=version,
                    now=now, started_at=started_at).rowcount


def insert_beat(conn, *, binary, host, version, started_at, now, **_):
    """A new service's row (the first beat of a conductor or agent)."""
    quotas.insert_new(conn, S, binary=binary, host=host, version=version,
                      last_seen=now, started_at=started_at)


def list_all(conn):
    query = sa.select(S).order_by(S.c.binary, S.c.host)
    return [dict(r._mapping) for r in conn.execute(query)]
