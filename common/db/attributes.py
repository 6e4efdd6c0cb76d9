"""What the user says of a server, none of it a state (issue 22): its
name and description, user metadata, tags, lock, access addresses,
hostname and disk config.

One method, :meth:`AttributesMixin.update_attributes`, changes any of them
in one transaction on the row read ``FOR UPDATE``: two requests that each
add a metadata item or a tag both land (a read-modify-write in the API
tier would lose one). No task's write touches these columns, so a change
runs beside any task, as a rename does.

``changes`` (validated by :func:`validate`)::

    {'name': str, 'description': str | None,
     'access_ip_v4': str | None, 'access_ip_v6': str | None,
     'hostname': str | None, 'auto_disk_config': bool,
     'metadata': {'replace': bool, 'set': {key: value}, 'delete': [key]},
     'tags': {'replace': bool, 'add': [tag], 'delete': [tag]},
     'lock': {'locked': bool, 'by': 'owner' | 'admin', 'reason': str|None}}

A ``metadata`` or ``tags`` ``delete`` of an item the server does not have
is a 404, as Nova answers it; more metadata items than ``metadata_items``
is Nova's 403, more tags than :data:`MAX_TAGS` Nova's 400.
"""

import sqlalchemy as sa

from common import exception
from common.db import models
from common.db import quota_classes
from common.states import vm

I = models.Instance.__table__          # noqa: E741 (the table, read as "I")
MAX_TAGS = 50                          # Nova's per-server limit
_KINDS = {'name': str, 'description': (str, type(None)), 'metadata': dict,
          'tags': dict, 'lock': dict, 'access_ip_v4': (str, type(None)),
          'access_ip_v6': (str, type(None)), 'hostname': (str, type(None)),
          'auto_disk_config': bool}
# Columns a change sets as they come (validated by the API tier).
_AS_GIVEN = ('name', 'description', 'access_ip_v4', 'access_ip_v6',
             'hostname', 'auto_disk_config')


def validate(changes):
    """Refuse a ``changes`` dict of the wrong shape (an RPC caller's bug)."""
    if not isinstance(changes, dict) or not changes:
        raise exception.Invalid(reason='changes must be a non-empty dict')
    for key, value in changes.items():
        if key not in _KINDS or not isinstance(value, _KINDS[key]):
            raise exception.Invalid(
                reason='changes: %r is not one of %s with a value of the '
                       'right type' % (key, ', '.join(sorted(_KINDS))))


def _metadata(current, change, limit):
    meta = {} if change.get('replace') else dict(current or {})
    for key in change.get('delete', ()):
        if key not in meta:
            raise exception.NotFound('Metadata item was not found')
        del meta[key]
    meta.update(change.get('set', {}))
    if limit >= 0 and len(meta) > limit:
        raise exception.QuotaExceeded(
            'Quota exceeded for metadata_items: Requested %d, but the '
            'limit is %d. Maximum number of metadata items exceeds %d'
            % (len(meta), limit, limit))
    return meta


def _tags(current, change):
    tags = [] if change.get('replace') else list(current or [])
    for tag in change.get('delete', ()):
        if tag not in tags:
            raise exception.NotFound('Tag %s could not be found.' % tag)
        tags.remove(tag)
    for tag in change.get('add', ()):
        if tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise exception.Invalid(
            'The number of tags exceeded the per-server limit %d' % MAX_TAGS)
    return tags


def _lock(change):
    if not change['locked']:
        return {'locked': False, 'locked_by': None, 'locked_reason': None}
    return {'locked': True, 'locked_by': change.get('by') or 'owner',
            'locked_reason': change.get('reason')}


def new_values(inst, changes, *, metadata_items=-1):
    """The column values ``changes`` makes of the row ``inst``."""
    values = {k: changes[k] for k in _AS_GIVEN if k in changes}
    if 'metadata' in changes:
        values['metadata'] = _metadata(inst.get('metadata'),
                                       changes['metadata'], metadata_items)
    if 'tags' in changes:
        values['tags'] = _tags(inst.get('tags'), changes['tags'])
    if 'lock' in changes:
        values.update(_lock(changes['lock']))
    return values


class AttributesMixin:
    """:class:`common.db.api.StateDB`'s writes of a server's attributes."""

    def update_attributes(self, instance_uuid, changes, *, check=None,
                          metadata_items=-1):
        """Apply ``changes`` (see the module) to one instance; returns
        ``(before, after)``. ``check(before)`` runs on the row read for
        update, before any change, and may raise to refuse (the owner, the
        lock). A hard-deleted instance is not found. ``metadata_items``
        None: the instance's project's limit (its quota set's)."""
        validate(changes)

        def txn(conn):
            before = self._get(conn, instance_uuid, lock=True)
            if before['vm_state'] == vm.HARD_DELETED:
                raise exception.InstanceNotFound(instance=instance_uuid)
            if check is not None:
                check(before)
            limit = metadata_items
            if limit is None:
                limit = (quota_classes.project_values(
                    conn, before['project_id'], self.quota)['metadata_items']
                    if 'metadata' in changes else -1)
            values = new_values(before, changes, metadata_items=limit)
            values['updated_at'] = self.clock()
            conn.execute(sa.update(I).where(I.c.uuid == instance_uuid)
                         .values({I.c[k]: v for k, v in values.items()}))
            return before, dict(before, **values)
        return self.db.transaction(txn)
