"""The rows Nova's shelving reads and writes besides the states (mixed into
:class:`common.db.api.StateDB`; :mod:`conductor.shelve`).

``shelved_at`` and ``shelved_image_id`` are set when a shelve ends and
cleared when an unshelve ends (in the finish's own UPDATE); the periodic
sweep reads them here: the instances shelved long enough to be offloaded,
and the hard-deleted ones whose snapshot is still to be deleted.
"""

import sqlalchemy as sa

from common.db import models
from common.states import vm

I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)


class ShelvingMixin:

    def list_shelved(self, *, before=None, deleted=False):
        """Idle SHELVED instances shelved before ``before``; or, with
        ``deleted``, hard-deleted ones that still name a snapshot."""
        if deleted:
            query = sa.select(I).where(I.c.vm_state == vm.HARD_DELETED,
                                       I.c.shelved_image_id.is_not(None))
        else:
            query = sa.select(I).where(I.c.vm_state == vm.SHELVED,
                                       I.c.task_id.is_(None),
                                       I.c.shelved_at <= before)
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(
                query.order_by(I.c.uuid))], readonly=True)

    def set_availability_zone(self, ctx, instance_uuid, zone):
        """The zone an unshelve asked for (None: any), stored as the
        instance's own while the task ``ctx.task_id`` holds it (Nova's
        request spec keeps it even if the scheduling then fails)."""
        def txn(conn):
            res = conn.execute(sa.update(I).where(
                I.c.uuid == instance_uuid,
                I.c.task_id == ctx.task_id).values(availability_zone=zone))
            if res.rowcount != 1:
                self._preempted(conn, instance_uuid, ctx.task_id)
            return self._get(conn, instance_uuid)
        return self.db.transaction(txn)

    def forget_shelved_image(self, instance_uuid, image_id):
        """The snapshot ``image_id`` is deleted: the instance no longer
        names it (unless it names another by now)."""
        def txn(conn):
            conn.execute(sa.update(I).where(
                I.c.uuid == instance_uuid,
                I.c.shelved_image_id == image_id).values(
                    shelved_image_id=None))
        self.db.transaction(txn)
