"""Services and their heartbeats (the ``services`` table), for
``tristate-manage status``: conductors write their own row from their
periodic loop; a conductor writes an agent's when it receives the agent's
heartbeat."""

import sqlalchemy as sa

from common.db import models
from common.db import quotas

S = models.Service.__table__
CONDUCTOR = 'tristate-conductor'
AGENT = 'tristate-compute-agent'


def beat(conn, *, binary, host, version, started_at, now):
    values = {'version': version, 'last_seen': now}
    if started_at is not None:
        values['started_at'] = started_at
    res = conn.execute(sa.update(S).where(S.c.binary == binary,
                                          S.c.host == host).values(**values))
    if res.rowcount == 0:
        quotas.insert_new(conn, S, binary=binary, host=host,
                           **dict({'started_at': started_at}, **values))


def list_all(conn):
    query = sa.select(S).order_by(S.c.binary, S.c.host)
    return [dict(r._mapping) for r in conn.execute(query)]
