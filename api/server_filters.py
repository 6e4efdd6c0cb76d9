"""The filters and orders of ``GET /servers`` added for issue 22, as Nova
applies them: tags (2.26), ``locked`` (2.73), ``reservation_id``,
``launch_index``, ``sort_key``/``sort_dir``, and which deleted servers a
listing includes.

Each filter is a predicate on (instance, body), as in
:mod:`api.routes.servers`, which combines them.
"""

import datetime

from oslo_utils import strutils

from api import request
from common import exception
from common.states import vm

# Nova's sort keys, and the instance's field each one orders by. Keys of
# what Tristate does not have (every server has the same value: no key
# pair, no access IP, ...) order nothing, as in Nova where all are equal.
SORT_KEYS = {
    'created_at': 'created_at', 'updated_at': 'updated_at',
    'launched_at': 'launched_at', 'terminated_at': 'hard_deleted_at',
    'display_name': 'name', 'hostname': 'name',
    'display_description': 'description', 'uuid': 'uuid',
    'host': 'host', 'node': 'host', 'image_ref': 'image_ref',
    'instance_type_id': 'flavor_name', 'launch_index': 'launch_index',
    'locked': 'locked', 'locked_by': 'locked_by',
    'power_state': 'power_state', 'progress': 'progress_percent',
    'project_id': 'project_id', 'user_id': 'user_id',
    'task_state': 'task_state', 'vm_state': 'vm_state',
    'access_ip_v4': None, 'access_ip_v6': None, 'auto_disk_config': None,
    'availability_zone': None, 'config_drive': None, 'kernel_id': None,
    'key_name': None, 'ramdisk_id': None, 'root_device_name': None,
}
# Only an admin orders by where servers run (Nova's 403).
_ADMIN_SORT_KEYS = frozenset({'host', 'node'})
_DIRS = ('asc', 'desc')


def _order_value(inst, field):
    value = inst.get(field) if field else None
    if isinstance(value, datetime.datetime):
        value = value.isoformat()
    # None sorts first in ascending order, as PostgreSQL's NULLS FIRST
    # does for a descending one; bool and int compare among themselves.
    return (value is not None, value if value is not None else '')


def sort(insts, query):
    """``insts`` in the order ``sort_key``/``sort_dir`` ask (pairs, as
    Nova: a missing direction is ``desc``), ties broken by creation time
    and uuid, newest first (Nova's default order)."""
    keys, dirs = query.get('sort_key', []), query.get('sort_dir', [])
    for direction in dirs:
        if direction not in _DIRS:
            raise exception.Invalid(
                "Invalid input for query parameters sort_dir. Value: %s. "
                "'%s' is not one of ['asc', 'desc']" % (direction, direction))
    for key in keys:
        if key not in SORT_KEYS:
            raise exception.Invalid(
                "Invalid input for query parameters sort_key. Value: %s. "
                "'%s' is not one of %s" % (key, key, sorted(SORT_KEYS)))
        if key in _ADMIN_SORT_KEYS and not request.context().is_admin:
            raise exception.Forbidden(
                action='sorting servers by %s (admin only)' % key)
    if not keys:        # Nova's default order, in one pass
        return sorted(insts, key=lambda i: (str(i['created_at']), i['uuid']),
                      reverse=True)
    pairs = [(k, dirs[i] if i < len(dirs) else 'desc')
             for i, k in enumerate(keys)]
    pairs += [('created_at', 'desc'), ('uuid', 'desc')]
    ordered = list(insts)
    for key, direction in reversed(pairs):
        field = SORT_KEYS[key]
        ordered.sort(key=lambda i, f=field: _order_value(i, f),
                     reverse=direction == 'desc')
    return ordered


def _names(query, name):
    return {t for v in query[name] for t in v.split(',') if t}


def tags(query):
    """Nova's four tag filters: ``tags`` (has all), ``tags-any`` (has
    one), ``not-tags`` (lacks one of), ``not-tags-any`` (has none of);
    values comma-separated."""
    checks = []
    if 'tags' in query:
        wanted = _names(query, 'tags')
        checks.append(lambda i, b: wanted <= set(i.get('tags') or ()))
    if 'tags-any' in query:
        anyof = _names(query, 'tags-any')
        checks.append(lambda i, b: bool(anyof & set(i.get('tags') or ())))
    if 'not-tags' in query:
        notall = _names(query, 'not-tags')
        checks.append(lambda i, b: not notall <= set(i.get('tags') or ()))
    if 'not-tags-any' in query:
        noneof = _names(query, 'not-tags-any')
        checks.append(lambda i, b: not noneof & set(i.get('tags') or ()))
    return checks


def locked(query):
    if 'locked' not in query:
        return []
    value = query['locked'][-1]
    try:
        wanted = strutils.bool_from_string(value, strict=True)
    except ValueError:
        raise exception.Invalid(
            "Invalid input for query parameters locked. Value: %s. '%s' is "
            "not a boolean (true or false)" % (value, value)) from None
    return [lambda i, b: bool(i.get('locked')) == wanted]


def by_boot(query):
    """``reservation_id`` (the boot request's) and ``launch_index``."""
    checks = []
    if 'reservation_id' in query:
        rid = query['reservation_id'][-1]
        checks.append(lambda i, b: i.get('boot_reservation_id') == rid)
    if 'launch_index' in query:
        index = query['launch_index'][-1]
        checks.append(lambda i, b: str(i.get('launch_index') or 0) == index)
    return checks


def deleted(query):
    """Which deleted servers the listing shows, as Nova: ``'only'`` with
    ``deleted=true`` or ``vm_state=deleted`` (admins only), ``'also'``
    with ``changes-since`` or ``changes-before`` (a client syncing a
    cache learns of deletes), else ``None``."""
    wanted = [s.lower() for s in query.get('vm_state', ())]
    by_state = 'deleted' in wanted or vm.HARD_DELETED in wanted
    if by_state and not request.context().is_admin:
        raise exception.Forbidden(
            action='listing deleted instances (admin only)')
    try:
        flag = strutils.bool_from_string(
            query.get('deleted', ['false'])[-1], strict=True)
    except ValueError:
        raise exception.Invalid(
            "Invalid input for query parameters deleted. Value: %s. It is "
            "not a boolean (true or false)" % query['deleted'][-1]) from None
    if by_state or flag:
        return 'only'
    if 'changes-since' in query or 'changes-before' in query:
        return 'also'
    return None


def deleted_check(mode):
    if mode == 'only':
        return [lambda i, b: i['vm_state'] == vm.HARD_DELETED]
    return []
