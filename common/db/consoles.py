"""Console tokens (issue 24): created by the conductor for one instance's
serial console, consumed once by ``tristate-console-proxy``.

A token is 32 random bytes (URL-safe text) handed to the client once; the
table keeps its SHA-256 digest only, so a copy of the database opens
nothing. Consuming is one conditional UPDATE (unused, unexpired, and its
instance not hard-deleted, all in the WHERE clause): two proxies given the
same token cannot both win, and a token of a deleted instance opens
nothing even before its row is removed. Rows die with their instance
(:func:`forget`, on the hard delete's cleanup) or when expired
(:func:`purge`, on every create).
"""

import datetime
import hashlib
import secrets

import sqlalchemy as sa

from common import exception
from common.db import models
from common.states import vm

T = models.ConsoleToken.__table__
I = models.Instance.__table__  # noqa: E741


REFUSED = ('The console token is unknown, expired, already used, or its '
           'server was deleted.')


def digest(token):
    return hashlib.sha256(token.encode('utf-8')).hexdigest()


def create(database, *, instance, console_type, endpoint, ttl, now):
    """A new token for ``instance``'s console at ``endpoint`` (``host``,
    ``port`` of the listener, on the instance's host); returns
    ``{'token', 'expires_at'}``."""
    token = secrets.token_urlsafe(32)
    expires = now + datetime.timedelta(seconds=ttl)

    def insert(conn):
        purge(conn, now)
        conn.execute(sa.insert(T).values(
            token_hash=digest(token), instance_uuid=instance['uuid'],
            project_id=instance['project_id'], console_type=console_type,
            host=instance['host'], address=endpoint['host'],
            port=int(endpoint['port']), created_at=now, expires_at=expires))
    database.transaction(insert)
    return {'token': token, 'expires_at': expires}


def consume(database, token, now):
    """The console the token opens (``instance_uuid``, ``host``,
    ``address``, ``port``, ``console_type``), marking it used; raises
    NotFound when it is unknown, used, expired or its
    instance is gone."""
    alive = sa.select(I.c.uuid).where(I.c.vm_state != vm.HARD_DELETED)

    def take(conn):
        row = conn.execute(
            sa.update(T).where(T.c.token_hash == digest(token),
                               T.c.used_at.is_(None), T.c.expires_at > now,
                               T.c.instance_uuid.in_(alive))
            .values(used_at=now)
            .returning(T.c.instance_uuid, T.c.host, T.c.address, T.c.port,
                       T.c.console_type)).first()
        return None if row is None else dict(row._mapping)
    found = database.transaction(take)
    if found is None:
        raise exception.NotFound(REFUSED)
    return found


def alive(database, instance_uuids):
    """Those of ``instance_uuids`` whose instance still exists."""
    uuids = list(instance_uuids)
    if not uuids:
        return []
    query = sa.select(I.c.uuid).where(I.c.uuid.in_(uuids),
                                      I.c.vm_state != vm.HARD_DELETED)
    return database.transaction(
        lambda conn: sorted(r.uuid for r in conn.execute(query)),
        readonly=True)


def forget(database, instance_uuid):
    """Remove every token of an instance (it was deleted)."""
    database.transaction(lambda conn: conn.execute(
        sa.delete(T).where(T.c.instance_uuid == instance_uuid)))


def purge(conn, now):
    conn.execute(sa.delete(T).where(T.c.expires_at <= now))
