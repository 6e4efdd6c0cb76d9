"""The StateDB's key pairs (mixed into :class:`common.db.api.StateDB`):
the table Nova's ``os-keypairs`` serves and that ``key_name`` on create
reads (issue 24).

A key pair belongs to one user and is unique by name for that user (the
table's constraint: two concurrent creates of one name give one 409). A
user may hold at most ``key_pairs`` of them (``[quota] key_pairs``, Nova's
per-user limit), counted in the transaction that inserts. Delete removes
the row: a server keeps the public key it was built with in its own row.
A rebuild may give the server another key or user data
(:meth:`KeyPairsMixin.set_guest_access`).
"""

import sqlalchemy as sa

from common import exception
from common.db import models

K = models.KeyPair.__table__
I = models.Instance.__table__          # noqa: E741 (the table, read as "I")
# What a rebuild may change of an instance's access (Nova 2.54, 2.57).
GUEST_COLUMNS = frozenset({'key_name', 'key_data', 'user_data',
                           'config_drive'})


class KeyPairExists(exception.Conflict):
    msg_fmt = "Key pair '%(name)s' already exists."


class KeyPairNotFound(exception.NotFound):
    msg_fmt = 'Keypair %(name)s not found for user %(user_id)s'


class KeyPairQuota(exception.QuotaExceeded):
    msg_fmt = ('Quota exceeded, too many key pairs: %(user_id)s has '
               '%(count)d, the limit ([quota] key_pairs) is %(limit)d.')


class MarkerNotFound(exception.Invalid):
    msg_fmt = 'Marker %(marker)s could not be found.'


def _row(conn, user_id, name):
    row = conn.execute(sa.select(K).where(K.c.user_id == user_id,
                                          K.c.name == name)).first()
    if row is None:
        raise KeyPairNotFound(name=name, user_id=user_id)
    return dict(row._mapping)


class KeyPairsMixin:
    """Needs ``self.db`` and ``self.clock``."""

    def create_keypair(self, *, user_id, name, public_key, fingerprint,
                       key_type, limit=-1):
        """Insert a key pair; 409 if ``user_id`` has one of that name,
        Nova's 403 if it would hold more than ``limit`` (-1: no limit)."""
        def txn(conn):
            if conn.execute(sa.select(K.c.id).where(
                    K.c.user_id == user_id, K.c.name == name)).first():
                raise KeyPairExists(name=name)
            if limit >= 0:
                count = conn.execute(sa.select(sa.func.count()).select_from(
                    K).where(K.c.user_id == user_id)).scalar()
                if count >= limit:
                    raise KeyPairQuota(user_id=user_id, count=count,
                                       limit=limit)
            values = {'user_id': user_id, 'name': name,
                      'public_key': public_key, 'fingerprint': fingerprint,
                      'type': key_type, 'created_at': self.clock()}
            done = conn.execute(sa.insert(K).values(**values))
            return dict(values, id=done.inserted_primary_key[0])
        try:
            return self.db.transaction(txn)
        except sa.exc.IntegrityError:
            # a concurrent create of the same name committed first
            raise KeyPairExists(name=name) from None

    def get_keypair(self, user_id, name):
        """The key pair, or 404 naming it and the user."""
        return self.db.transaction(_row, user_id, name, readonly=True)

    def list_keypairs(self, user_id, *, limit=None, marker=None):
        """``user_id``'s key pairs by name; after ``marker`` (a name, 400
        if the user has none of it), at most ``limit``."""
        def txn(conn):
            query = sa.select(K).where(K.c.user_id == user_id).order_by(
                K.c.name)
            if marker is not None:
                _marker(conn, user_id, marker)
                query = query.where(K.c.name > marker)
            if limit is not None:
                query = query.limit(limit)
            return [dict(r._mapping) for r in conn.execute(query)]
        return self.db.transaction(txn, readonly=True)

    def count_keypairs(self, user_id):
        return self.db.transaction(lambda conn: conn.execute(
            sa.select(sa.func.count()).select_from(K).where(
                K.c.user_id == user_id)).scalar(), readonly=True)

    def set_guest_access(self, ctx, instance_uuid, values):
        """Store a rebuild's new ``key_name``/``key_data``/``user_data``,
        written by the task that holds the instance (``ctx.task_id``;
        TaskPreempted otherwise). Returns the row after."""
        unknown = set(values) - GUEST_COLUMNS
        if unknown:
            raise exception.Invalid(reason='not guest access columns: %s'
                                    % ', '.join(sorted(unknown)))

        def txn(conn):
            done = conn.execute(sa.update(I).where(
                I.c.uuid == instance_uuid, I.c.task_id == ctx.task_id).values(
                    updated_at=self.clock(), **values))
            if done.rowcount != 1:
                self._preempted(conn, instance_uuid, ctx.task_id)
            return self._get(conn, instance_uuid)
        return self.db.transaction(txn)

    def delete_keypair(self, user_id, name):
        """Remove the key pair; 404 if ``user_id`` has none of that name."""
        def txn(conn):
            done = conn.execute(sa.delete(K).where(K.c.user_id == user_id,
                                                   K.c.name == name))
            if not done.rowcount:
                raise KeyPairNotFound(name=name, user_id=user_id)
        self.db.transaction(txn)


def _marker(conn, user_id, marker):
    if conn.execute(sa.select(K.c.id).where(
            K.c.user_id == user_id, K.c.name == marker)).first() is None:
        raise MarkerNotFound(marker=marker)
