"""The image catalogue: image records, their members, and the services'
shared keys (tables ``images``, ``image_members``, ``service_keys``).

Every function takes a :class:`common.db.api.StateDB` (``statedb``: its
database and clock) and, where a user asks, the caller's context, and
returns plain dicts. Who sees what is Glance's rule (:func:`_visible`): an
admin sees every image; a project its own, the ``public`` and ``community``
ones, and the ``shared`` ones it is a member of (any member status for a
show; the accepted ones, or ``member_status``, in a list). An image others
cannot see is "not found", never "forbidden"; one they see but do not own
is "forbidden" to change.

Status (Glance's): ``queued`` (no data) → ``saving`` (an upload runs) →
``active``; a failed upload goes back to ``queued`` (Glance's restore), a
failed snapshot to ``killed``; a delete sets ``deleted`` and
``deleted_at`` (the row stays; a deleted image is not found). Uploads are
guarded by a token: :func:`begin_upload` moves queued→saving and writes
``upload:<uuid>`` in ``location`` (never shown to users); the upload then
touches the row (:func:`touch_upload`) while bytes move, and only the
holder of the token can finish (:func:`finish_upload`) or give up
(:func:`abort_upload`). An upload whose process died leaves ``saving``
behind: once its row has not been touched for ``stale_after`` seconds, the
next :func:`begin_upload` takes it over (the dead upload's token no longer
finishes anything), and :func:`recover_stale_uploads` (for a check or a
periodic job) puts such images back to ``queued``.
"""

import datetime
import secrets
import uuid as uuidlib

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from common import exception
from common.db import models
from common.db import prepared
from common.db.prepared import bind
from common.db import quotas

I = models.Image.__table__  # noqa: E741
M = models.ImageMember.__table__
K = models.ServiceKey.__table__

QUEUED, SAVING, ACTIVE = 'queued', 'saving', 'active'
KILLED, DELETED, DEACTIVATED = 'killed', 'deleted', 'deactivated'
STATUSES = (QUEUED, SAVING, ACTIVE, KILLED, DELETED, DEACTIVATED)
VISIBILITIES = ('private', 'public', 'shared', 'community')
DISK_FORMATS = ('raw', 'qcow2')
CONTAINER_FORMATS = ('bare',)
MEMBER_STATUSES = ('pending', 'accepted', 'rejected')
HASH_ALGO = 'sha512'
UPLOAD_TOKEN_PREFIX = 'upload:'
# Columns a user may set (create or PATCH); the rest are the service's.
USER_COLUMNS = ('name', 'visibility', 'protected', 'os_hidden',
                'disk_format', 'container_format', 'min_disk', 'min_ram')
SORT_KEYS = ('name', 'status', 'container_format', 'disk_format', 'size',
             'id', 'created_at', 'updated_at')
# Filters that compare a column (``in:a,b`` allowed for the first five).
LIST_FILTERS = ('name', 'status', 'id', 'disk_format', 'container_format',
                'owner', 'checksum', 'os_hash_value')
_IN_FILTERS = frozenset(LIST_FILTERS[:5])
# What NULL sorts as, so that keyset pagination compares plain values.
_NULL_AS = {'name': '', 'container_format': '', 'disk_format': '',
            'size': -1}
DEFAULT_LIMIT = 25
MAX_LIMIT = 1000


def _row(row):
    return dict(row._mapping) if row is not None else None


def _now(statedb):
    return statedb.clock()


# --- visibility ------------------------------------------------------------

def _is_member(project, statuses=None):
    query = sa.select(M.c.image_id).where(M.c.image_id == I.c.id,
                                          M.c.member == project)
    if statuses is not None:
        query = query.where(M.c.status.in_(statuses))
    return sa.exists(query)


def _visible(ctx, member_statuses=None):
    """The WHERE clause of the images ``ctx`` may see (None: all)."""
    if ctx is None or ctx.is_admin:
        return None
    project = ctx.project_id
    return sa.or_(I.c.visibility.in_(('public', 'community')),
                  I.c.owner.is_(None), I.c.owner == project,
                  sa.and_(I.c.visibility == 'shared',
                          _is_member(project, member_statuses)))


def can_see(ctx, image, member_status=None):
    """Whether ``ctx`` sees ``image`` (a row; ``member_status``: the
    caller's membership, if any), by the rule of :func:`_visible`."""
    if ctx is None or ctx.is_admin or image['owner'] in (None,
                                                          ctx.project_id):
        return True
    if image['visibility'] in ('public', 'community'):
        return True
    return image['visibility'] == 'shared' and member_status is not None


def owns(ctx, image):
    return ctx is None or ctx.is_admin or image['owner'] == ctx.project_id


def _check_owner(ctx, image, what):
    if not owns(ctx, image):
        raise exception.Forbidden('You are not permitted to %s image %s.'
                                  % (what, image['id']))


# --- reads -----------------------------------------------------------------

def _get(conn, ctx, image_id, lock=False):
    query = sa.select(I).where(I.c.id == image_id, I.c.status != DELETED)
    visible = _visible(ctx)
    if visible is not None:
        query = query.where(visible)
    if lock:
        query = query.with_for_update()
    image = _row(conn.execute(query).first())
    if image is None:
        raise exception.ImageNotFound(image=image_id)
    return image


# What a server create, rebuild or rescue checks, by prepared statements
# (the create path is hot: no statement compiled per request).
_FOR_BOOT = prepared.Prepared(sa.select(
    I.c.id, I.c.status, I.c.visibility, I.c.owner, I.c.disk_format,
    I.c.min_disk, I.c.min_ram, I.c.size, I.c.virtual_size,
    I.c.properties).where(
        I.c.id == bind('id', I.c.id.type), I.c.status != DELETED))
_MEMBERSHIP = prepared.Prepared(sa.select(M.c.status).where(
    M.c.image_id == bind('id', M.c.image_id.type),
    M.c.member == bind('member', M.c.member.type)))


def get_for_boot(statedb, ctx, image_id):
    """What a boot checks of the image (id, status, visibility, owner,
    disk_format, min_disk, min_ram, size, virtual_size, properties) if ``ctx`` sees it
    (:func:`can_see`), else :class:`~common.exception.ImageNotFound`."""
    def txn(conn):
        image = _FOR_BOOT.one(conn, id=image_id)
        if image is None:
            raise exception.ImageNotFound(image=image_id)
        member = None
        if image['visibility'] == 'shared' and not owns(ctx, image):
            found = _MEMBERSHIP.one(conn, id=image_id,
                                    member=ctx.project_id)
            member = found and found['status']
        if not can_see(ctx, image, member):
            raise exception.ImageNotFound(image=image_id)
        return image
    return statedb.db.transaction(txn, readonly=True)


def get(statedb, ctx, image_id):
    """The image if ``ctx`` sees it (None: any image), else
    :class:`~common.exception.ImageNotFound`. Deleted images are not found."""
    return statedb.db.transaction(_get, ctx, image_id, readonly=True)


def _filter_conditions(filters):
    conditions = []
    for key in LIST_FILTERS:
        value = filters.get(key)
        if value is None:
            continue
        if key in _IN_FILTERS and value.startswith('in:'):
            conditions.append(I.c[key].in_(
                [v.strip() for v in value[3:].split(',')]))
            continue
        if key in _IN_FILTERS and value.startswith('eq:'):
            value = value[3:]
        conditions.append(I.c[key] == value)
    for key in ('protected', 'os_hidden'):
        if filters.get(key) is not None:
            conditions.append(I.c[key] == filters[key])
    if filters.get('size_min') is not None:
        conditions.append(I.c.size >= filters['size_min'])
    if filters.get('size_max') is not None:
        conditions.append(I.c.size <= filters['size_max'])
    return conditions


# Tags and properties are JSON: matched by containment on PostgreSQL, by
# json_each on SQLite (which decodes keys exactly, whatever they hold; a
# JSON path would not).

def _has_tag(conn, tag):
    if conn.dialect.name == 'postgresql':
        return sa.cast(I.c.tags, postgresql.JSONB).contains([tag])
    each = sa.func.json_each(I.c.tags).table_valued('value')
    return sa.exists(sa.select(sa.literal(1)).select_from(each).where(
        each.c.value == tag))


def _has_property(conn, key, value):
    if conn.dialect.name == 'postgresql':
        return sa.cast(I.c.properties, postgresql.JSONB).contains(
            {key: value})
    each = sa.func.json_each(I.c.properties).table_valued('key', 'value')
    return sa.exists(sa.select(sa.literal(1)).select_from(each).where(
        each.c.key == key, each.c.value == value))


def _list_visibility(ctx, visibility, member_status):
    """Glance's list rule: what ``ctx`` sees, shared images only with the
    member status asked for, community images only when asked for or
    owned, and only ``visibility`` when given ('all': any)."""
    conditions = []
    statuses = (None if member_status == 'all' else (member_status,))
    visible = _visible(ctx, statuses)
    if visible is not None:
        # a shared image the project owns is listed whatever its members
        conditions.append(visible)
    if visibility is not None:
        if visibility != 'all':
            conditions.append(I.c.visibility == visibility)
    elif ctx is not None:
        conditions.append(sa.or_(I.c.owner == ctx.project_id,
                                 I.c.visibility != 'community'))
    return conditions


def _sort_column(key):
    column = I.c[key]
    if key in _NULL_AS:
        return sa.func.coalesce(column, _NULL_AS[key])
    return column


def _after_marker(sort, marker):
    """Rows after ``marker`` in the order of ``sort`` ([(key, dir)])."""
    alternatives = []
    for i, (key, direction) in enumerate(sort):
        same = [_sort_column(k) == _marker_value(marker, k)
                for k, _ in sort[:i]]
        column, value = _sort_column(key), _marker_value(marker, key)
        beyond = column > value if direction == 'asc' else column < value
        alternatives.append(sa.and_(*same, beyond))
    return sa.or_(*alternatives)


def _marker_value(marker, key):
    value = marker[key]
    return _NULL_AS.get(key) if value is None else value


def full_sort(sort):
    """``sort`` ([(key, dir)]) ended by created_at and id, so that the
    order (and the pages) are total."""
    sort = list(sort) or [('created_at', 'desc')]
    last_dir = sort[-1][1]
    for key in ('created_at', 'id'):
        if key not in [k for k, _ in sort]:
            sort.append((key, last_dir))
    return sort


def list_images(statedb, ctx, *, filters=None, tags=(), visibility=None,
                member_status='accepted', sort=(), limit=DEFAULT_LIMIT,
                marker=None):
    """One page of the images ``ctx`` sees, Glance's list: no deleted or
    killed images, os_hidden ones only when ``filters['os_hidden']`` is
    true. ``marker``: the id of the last image of the previous page (it
    must be one the caller sees, else :class:`~common.exception.Invalid`)."""
    filters = dict(filters or {})
    filters.setdefault('os_hidden', False)
    sort = full_sort(sort)

    def txn(conn):
        query = sa.select(I).where(I.c.status.notin_((DELETED, KILLED)),
                                   *_filter_conditions(filters),
                                   *_list_visibility(ctx, visibility,
                                                     member_status))
        for tag in tags:
            query = query.where(_has_tag(conn, tag))
        for key, value in (filters.get('properties') or {}).items():
            query = query.where(_has_property(conn, key, value))
        if marker is not None:
            try:
                last = _get(conn, ctx, marker)
            except exception.ImageNotFound:
                raise exception.Invalid('marker %s not found: it must be the '
                                        'id of an image you can see'
                                        % marker) from None
            query = query.where(_after_marker(sort, last))
        order = [_sort_column(k).asc() if d == 'asc'
                 else _sort_column(k).desc() for k, d in sort]
        query = query.order_by(*order).limit(min(limit, MAX_LIMIT))
        return [_row(r) for r in conn.execute(query)]
    return statedb.db.transaction(txn, readonly=True)


# --- create, update, delete ------------------------------------------------

def create(statedb, ctx, values):
    """A new ``queued`` image owned by ``ctx``'s project (or the ``owner``
    in ``values``, which must be the caller's own project unless admin).
    ``values``: the validated user columns, ``id``, ``properties``,
    ``tags``. A taken id is a :class:`~common.exception.Conflict`."""
    now = _now(statedb)
    owner = values.get('owner') or ctx.project_id
    if owner != ctx.project_id and not ctx.is_admin:
        raise exception.Forbidden('You are not permitted to create images '
                                  'owned by %s.' % owner)
    record = {key: values[key] for key in USER_COLUMNS if key in values}
    record.update(
        id=values.get('id') or str(uuidlib.uuid4()), owner=owner,
        status=QUEUED, visibility=values.get('visibility') or 'shared',
        protected=bool(values.get('protected', False)),
        os_hidden=bool(values.get('os_hidden', False)),
        min_disk=values.get('min_disk') or 0,
        min_ram=values.get('min_ram') or 0,
        properties=dict(values.get('properties') or {}),
        tags=_unique(values.get('tags') or ()),
        created_at=now, updated_at=now)

    def txn(conn):
        taken = conn.execute(sa.select(I.c.id).where(
            I.c.id == record['id'])).first()
        if taken is not None:
            raise exception.Conflict('Image with identifier %s already '
                                     'exists!' % record['id'])
        conn.execute(sa.insert(I).values(**record))
        return _get(conn, None, record['id'])
    return statedb.db.transaction(txn)


def _unique(tags):
    return list(dict.fromkeys(tags))


def update(statedb, ctx, image_id, *, values=None, properties=None,
           remove=(), tags=None, add_tags=(), remove_tags=(), check=None,
           replace_properties=False):
    """Change an image ``ctx`` owns: user columns (``values``), properties
    set (``properties``; with ``replace_properties``, they become all the
    image's properties) or removed (``remove``: each must exist, else
    :class:`~common.exception.Conflict` as Glance), the tag list replaced
    (``tags``) or changed (``add_tags``, ``remove_tags``: each must exist).
    ``check(image)`` runs on the locked row before anything is written."""

    def txn(conn):
        image = _get(conn, ctx, image_id, lock=True)
        _check_owner(ctx, image, 'modify')
        if check is not None:
            check(image)
        props = {} if replace_properties else dict(image['properties'])
        for key in remove:
            if key not in props:
                raise exception.Conflict('Property %s does not exist.' % key)
            del props[key]
        props.update(properties or {})
        new_tags = list(image['tags']) if tags is None else _unique(tags)
        for tag in remove_tags:
            if tag not in new_tags:
                raise exception.ImageNotFound(
                    'Tag %s not found on image %s.' % (tag, image_id),
                    image=image_id)
            new_tags.remove(tag)
        new_tags = _unique(new_tags + list(add_tags))
        changes = dict(values or {}, properties=props, tags=new_tags,
                       updated_at=_now(statedb))
        conn.execute(sa.update(I).where(I.c.id == image_id).values(**changes))
        return _get(conn, None, image_id)
    return statedb.db.transaction(txn)


def delete(statedb, ctx, image_id):
    """Mark an image ``ctx`` owns deleted; the row before (its ``location``
    names the data to remove from the store: see :func:`stored_location`).
    A protected image is :class:`~common.exception.Forbidden`."""

    def txn(conn):
        image = _get(conn, ctx, image_id, lock=True)
        _check_owner(ctx, image, 'delete')
        if image['protected']:
            raise exception.Forbidden('Image %s is protected and cannot be '
                                      'deleted.' % image_id)
        now = _now(statedb)
        conn.execute(sa.update(I).where(I.c.id == image_id).values(
            status=DELETED, deleted_at=now, updated_at=now))
        return image
    return statedb.db.transaction(txn)


def stored_location(image):
    """The store URI of ``image``'s data, or None (no data, or an upload's
    token)."""
    location = image.get('location')
    if not location or location.startswith(UPLOAD_TOKEN_PREFIX):
        return None
    return location


def set_active(statedb, ctx, image_id, *, active):
    """Glance's deactivate (active → deactivated: its data can no longer be
    downloaded, except by admins) and reactivate (back to active), by the
    owner or an admin; any other status is
    :class:`~common.exception.Forbidden`."""
    source, target = ((DEACTIVATED, ACTIVE) if active
                      else (ACTIVE, DEACTIVATED))

    def txn(conn):
        image = _get(conn, ctx, image_id, lock=True)
        _check_owner(ctx, image, 'reactivate' if active else 'deactivate')
        if image['status'] not in (source, target):
            raise exception.Forbidden(
                "Not allowed to %s image in status '%s'"
                % ('reactivate' if active else 'deactivate', image['status']))
        conn.execute(sa.update(I).where(I.c.id == image_id).values(
            status=target, updated_at=_now(statedb)))
    statedb.db.transaction(txn)


# --- uploads ---------------------------------------------------------------

def begin_upload(statedb, image_id, *, ctx=None, stale_after=None):
    """queued → saving; the image with its upload token in ``location``.

    An image already ``saving`` whose row is older than ``stale_after``
    seconds (its upload died with its process) is taken over. Anything
    else is a :class:`~common.exception.Conflict` naming the status."""
    token = UPLOAD_TOKEN_PREFIX + str(uuidlib.uuid4())

    def txn(conn):
        image = _get(conn, ctx, image_id, lock=True)
        if ctx is not None:
            _check_owner(ctx, image, 'upload data to')
        now = _now(statedb)
        stale = (image['status'] == SAVING and stale_after is not None
                 and image['updated_at']
                 <= now - datetime.timedelta(seconds=stale_after))
        if image['status'] != QUEUED and not stale:
            raise exception.Conflict(
                'Image status transition from %s to saving is not allowed: '
                'only a queued image takes data' % image['status'])
        conn.execute(sa.update(I).where(I.c.id == image_id).values(
            status=SAVING, location=token, updated_at=now))
        return _get(conn, None, image_id)
    return statedb.db.transaction(txn)


def _holding(image_id, token):
    return (I.c.id == image_id, I.c.status == SAVING, I.c.location == token)


def touch_upload(statedb, image_id, token):
    """The upload holding ``token`` is alive; False if it no longer holds
    the image (deleted, or taken over)."""
    def txn(conn):
        return conn.execute(sa.update(I).where(*_holding(image_id, token))
                            .values(updated_at=_now(statedb))).rowcount == 1
    return statedb.db.transaction(txn)


def finish_upload(statedb, image_id, token, *, location, size, checksum,
                  os_hash_value, virtual_size=None):
    """saving → active with the data's facts; the image, or None when the
    upload no longer holds it (the caller removes the data it stored)."""
    def txn(conn):
        done = conn.execute(sa.update(I).where(*_holding(image_id, token))
                            .values(status=ACTIVE, location=location,
                                    size=size, checksum=checksum,
                                    os_hash_algo=HASH_ALGO,
                                    os_hash_value=os_hash_value,
                                    virtual_size=virtual_size,
                                    updated_at=_now(statedb)))
        if done.rowcount != 1:
            return None
        return _get(conn, None, image_id)
    return statedb.db.transaction(txn)


def abort_upload(statedb, image_id, token, *, status=QUEUED):
    """saving → ``status`` (queued, or killed) for the upload holding
    ``token``; False if it no longer held the image."""
    if status not in (QUEUED, KILLED):
        raise exception.InvalidState(field='status', value=status,
                                     expected='queued, killed')

    def txn(conn):
        return conn.execute(sa.update(I).where(*_holding(image_id, token))
                            .values(status=status, location=None,
                                    updated_at=_now(statedb))).rowcount == 1
    return statedb.db.transaction(txn)


def kill(statedb, image_id):
    """queued or saving → killed (a snapshot that failed); False if the
    image was in no such status."""
    def txn(conn):
        return conn.execute(sa.update(I).where(
            I.c.id == image_id, I.c.status.in_((QUEUED, SAVING))).values(
                status=KILLED, location=None,
                updated_at=_now(statedb))).rowcount == 1
    return statedb.db.transaction(txn)


def recover_stale_uploads(statedb, *, stale_after):
    """Images left ``saving`` by an upload that died (not touched for
    ``stale_after`` seconds) back to ``queued``; their ids."""
    def txn(conn):
        limit = _now(statedb) - datetime.timedelta(seconds=stale_after)
        stale = [r.id for r in conn.execute(sa.select(I.c.id).where(
            I.c.status == SAVING, I.c.updated_at <= limit))]
        if stale:
            conn.execute(sa.update(I).where(
                I.c.id.in_(stale), I.c.status == SAVING,
                I.c.updated_at <= limit).values(
                    status=QUEUED, location=None, updated_at=_now(statedb)))
        return stale
    return statedb.db.transaction(txn)


# --- members ---------------------------------------------------------------

def _membership(conn, image_id, member):
    return _row(conn.execute(sa.select(M).where(
        M.c.image_id == image_id, M.c.member == member)).first())


def _shared_image(conn, ctx, image_id):
    """The image (visible to ``ctx`` through any membership), which must be
    ``shared`` to have members."""
    image = _get(conn, None, image_id)
    mine = (_membership(conn, image_id, ctx.project_id)
            if ctx is not None else None)
    if not can_see(ctx, image, mine and mine['status']):
        raise exception.ImageNotFound(image=image_id)
    if image['visibility'] != 'shared':
        raise exception.Forbidden('Only shared images have members.')
    return image


def list_members(statedb, ctx, image_id):
    """The owner (and admins) see every member; a member its own."""
    def txn(conn):
        image = _shared_image(conn, ctx, image_id)
        query = sa.select(M).where(M.c.image_id == image_id).order_by(
            M.c.created_at, M.c.member)
        if not owns(ctx, image):
            query = query.where(M.c.member == ctx.project_id)
        return [_row(r) for r in conn.execute(query)]
    return statedb.db.transaction(txn, readonly=True)


def _member_seen(conn, ctx, image_id, member):
    """(image, membership) when ``ctx`` may see ``member`` of ``image_id``
    (the owner sees every member, a member itself), else
    :class:`~common.exception.ImageMemberNotFound`."""
    image = _shared_image(conn, ctx, image_id)
    found = _membership(conn, image_id, member)
    if found is None or not (owns(ctx, image) or member == ctx.project_id):
        raise exception.ImageMemberNotFound(image=image_id, member=member)
    return image, found


def get_member(statedb, ctx, image_id, member):
    def txn(conn):
        return _member_seen(conn, ctx, image_id, member)[1]
    return statedb.db.transaction(txn, readonly=True)


def add_member(statedb, ctx, image_id, member):
    """The owner shares the image with ``member`` (status pending)."""
    def txn(conn):
        image = _shared_image(conn, ctx, image_id)
        if not owns(ctx, image):
            raise exception.Forbidden('Not allowed to create members for '
                                      'image %s.' % image_id)
        if _membership(conn, image_id, member) is not None:
            raise exception.Conflict('Member %s is duplicated for image %s'
                                     % (member, image_id))
        now = _now(statedb)
        conn.execute(sa.insert(M).values(image_id=image_id, member=member,
                                         status='pending', created_at=now,
                                         updated_at=now))
        return _membership(conn, image_id, member)
    return statedb.db.transaction(txn)


def update_member(statedb, ctx, image_id, member, status):
    """The member (or an admin) accepts, rejects or sets back pending."""
    if status not in MEMBER_STATUSES:
        raise exception.InvalidState(field='status', value=status,
                                     expected=', '.join(MEMBER_STATUSES))

    def txn(conn):
        _member_seen(conn, ctx, image_id, member)
        if not ctx.is_admin and member != ctx.project_id:
            raise exception.Forbidden("You are not permitted to modify "
                                      "'status' on this image member.")
        conn.execute(sa.update(M).where(
            M.c.image_id == image_id, M.c.member == member).values(
                status=status, updated_at=_now(statedb)))
        return _membership(conn, image_id, member)
    return statedb.db.transaction(txn)


def delete_member(statedb, ctx, image_id, member):
    """The owner stops sharing with ``member``."""
    def txn(conn):
        image, _found = _member_seen(conn, ctx, image_id, member)
        if not owns(ctx, image):
            raise exception.Forbidden('Not allowed to delete members for '
                                      'image %s.' % image_id)
        conn.execute(sa.delete(M).where(M.c.image_id == image_id,
                                        M.c.member == member))
    statedb.db.transaction(txn)


# --- service keys ----------------------------------------------------------

def service_key(statedb, name):
    """The secret bytes named ``name`` (e.g. ``'image-grants'``), made on
    first use: an INSERT that does nothing if a concurrent caller inserted
    first, then a read of whichever won, so every caller gets the same key."""
    def read(conn):
        return conn.execute(sa.select(K.c.secret).where(
            K.c.name == name)).scalar()

    def txn(conn):
        secret = read(conn)
        if secret is None:
            quotas.insert_new(conn, K, name=name,
                              secret=secrets.token_hex(32),
                              created_at=_now(statedb))
            secret = read(conn)
        return secret
    secret = statedb.db.transaction(read, readonly=True)
    if secret is None:
        secret = statedb.db.transaction(txn)
    return bytes.fromhex(secret)
