"""Server groups (Nova's ``os-server-groups``, issue 25), mixed into
:class:`common.db.api.StateDB`, and the rules the scheduler places their
members by.

A group has one policy: ``affinity`` (every member on one host),
``anti-affinity`` (at most ``max_server_per_host`` members on a host, 1
unless the 2.64 rule says more), ``soft-affinity`` and
``soft-anti-affinity`` (preferences: the hosts holding most, or fewest,
members first; never a reason to refuse). An instance joins at most one
group, in the transaction that creates it (Nova's ``group`` scheduler
hint), and leaves it in its hard delete's transaction: its place on its
host and its count against ``server_group_members`` are free at once.

Why placement is atomic (the design). A member's host is chosen and taken
in one transaction (:meth:`common.db.hosts.HostsMixin.find_and_allocate`)
that first locks the group's row (:func:`placement`): ``SELECT ... FOR
UPDATE`` on PostgreSQL; on SQLite every write transaction is already
``BEGIN IMMEDIATE``, one at a time. A second member of the same group
waits on that lock until the first commits, and then (READ COMMITTED: each
statement reads what is committed when it starts) counts the first's
allocation among the group's hosts. So two concurrent builds of an
anti-affinity group never both see a host empty, on any number of
conductors; builds of different groups, or of none, never wait for each
other. A database constraint was the alternative (a unique (group, host)
row per member); it holds only for ``max_server_per_host = 1``, cannot
express affinity, and fails a build instead of choosing another host, so
the row lock was chosen. Members are counted on the hosts where they hold
an allocation (``allocations``): a moving member counts on both its hosts
until the move ends, and an instance that holds nothing (buried, deleted)
holds no place.
"""

import uuid as uuidlib

import sqlalchemy as sa

from common import exception
from common.db import models
from common.db import prepared
from common.db import quota_classes

G = models.ServerGroup.__table__
M = models.ServerGroupMember.__table__
A = models.Allocation.__table__

AFFINITY = 'affinity'
ANTI_AFFINITY = 'anti-affinity'
SOFT_AFFINITY = 'soft-affinity'
SOFT_ANTI_AFFINITY = 'soft-anti-affinity'
POLICIES = (AFFINITY, ANTI_AFFINITY, SOFT_AFFINITY, SOFT_ANTI_AFFINITY)
HARD = (AFFINITY, ANTI_AFFINITY)

# Every build's placement asks it (most instances are in no group): built
# and compiled once (common.db.prepared), not per build.
_GROUP_OF = prepared.Prepared(sa.select(M.c.group_id).where(
    M.c.instance_uuid == prepared.bind('uuid')))


GroupNotFound = exception.ServerGroupNotFound
GroupQuota = exception.ServerGroupQuota
MembersQuota = exception.ServerGroupMembersQuota


def quota_usage(conn, project_id):
    """{"server_groups": the project's groups} (os-quota-sets detail,
    /limits); ``server_group_members`` is per group, shown 0 as Nova."""
    return {'server_groups': conn.execute(
        sa.select(sa.func.count()).select_from(G).where(
            G.c.project_id == project_id)).scalar()}


def _limit(conn, project_id, resource, settings):
    return quota_classes.project_values(conn, project_id, settings)[resource]


def _members(conn, group_ids):
    """{group id: [member uuid, ...]} in the order they joined."""
    found = {gid: [] for gid in group_ids}
    if not group_ids:
        return found
    rows = conn.execute(sa.select(M.c.group_id, M.c.instance_uuid).where(
        M.c.group_id.in_(list(group_ids))).order_by(M.c.created_at,
                                                    M.c.instance_uuid))
    for row in rows:
        found[row.group_id].append(row.instance_uuid)
    return found


def _with_members(conn, rows):
    rows = [dict(r._mapping) for r in rows]
    members = _members(conn, [r['id'] for r in rows])
    for row in rows:
        row['members'] = members[row['id']]
    return rows


def _locked(conn, group_uuid):
    """The group's row, locked until the transaction ends (PostgreSQL; a
    SQLite write transaction holds the database already)."""
    row = conn.execute(sa.select(G).where(G.c.uuid == group_uuid)
                       .with_for_update()).first()
    if row is None:
        raise GroupNotFound(group=group_uuid)
    return dict(row._mapping)


def join(conn, group_uuid, instance_uuid, project_id, settings, now):
    """Make the new instance a member, in its create's transaction; Nova's
    403 when the group is full (``server_group_members`` of the group's
    project), 400 when it is gone (deleted since the request was read)."""
    try:
        group = _locked(conn, group_uuid)
    except GroupNotFound as err:
        raise exception.Invalid(err.message) from None
    limit = _limit(conn, project_id, 'server_group_members', settings)
    if limit >= 0:
        count = conn.execute(sa.select(sa.func.count()).select_from(M).where(
            M.c.group_id == group['id'])).scalar()
        if count + 1 > limit:
            raise MembersQuota(group=group_uuid, count=count, limit=limit)
    conn.execute(sa.insert(M).values(instance_uuid=instance_uuid,
                                     group_id=group['id'], created_at=now))


def leave(conn, instance_uuid):
    """The instance leaves its group (its hard delete's transaction)."""
    conn.execute(sa.delete(M).where(M.c.instance_uuid == instance_uuid))


def placement(conn, instance_uuid, *, lock=True):
    """The instance's group, locked for this transaction (see the module
    docstring; ``lock=False``: read only, to explain a failure), with
    ``hosts``: {host: members other than this instance holding an
    allocation there}; None when it is in no group."""
    gid = _GROUP_OF.run(conn, uuid=instance_uuid).scalar()
    if gid is None:
        return None
    query = sa.select(G).where(G.c.id == gid)
    group = dict(conn.execute(query.with_for_update() if lock else query)
                 .one()._mapping)
    rows = conn.execute(
        sa.select(A.c.host, sa.func.count(sa.distinct(A.c.instance_uuid)))
        .join(M, M.c.instance_uuid == A.c.instance_uuid)
        .where(M.c.group_id == gid, A.c.instance_uuid != instance_uuid)
        .group_by(A.c.host))
    group['hosts'] = {host: count for host, count in rows}
    return group


def per_host(group):
    """How many members a host may hold under a hard anti-affinity."""
    return group.get('max_server_per_host') or 1


def narrow(group, *, only, exclude, limit):
    """The search a member's placement makes: (only, exclude, limit), or
    None when the hard policy leaves no host (affinity with its host
    excluded, or another host forced)."""
    hosts = group['hosts']
    policy = group['policy']
    if policy == ANTI_AFFINITY:
        full = {h for h, n in hosts.items() if n >= per_host(group)}
        return only, sorted(set(exclude) | full), limit
    if policy == AFFINITY and hosts:
        home = max(sorted(hosts), key=hosts.get)
        if (only is not None and only != home) or home in exclude:
            return None
        return home, exclude, limit
    if policy in (SOFT_AFFINITY, SOFT_ANTI_AFFINITY):
        # read enough hosts that the preferred ones are among them
        return only, exclude, limit + len(hosts)
    return only, exclude, limit


def ordered(group, found):
    """The found hosts (best first by the weigher) in the soft policy's
    order: most members first (soft-affinity) or fewest (soft-anti);
    the weigher's order among equals."""
    hosts = group['hosts']
    if group['policy'] == SOFT_AFFINITY:
        return sorted(found, key=lambda h: -hosts.get(h['name'], 0))
    if group['policy'] == SOFT_ANTI_AFFINITY:
        return sorted(found, key=lambda h: hosts.get(h['name'], 0))
    return found


def explain(group):
    """Why a hard policy found no host, for the burial's reason."""
    if group is None or group['policy'] not in HARD:
        return ''
    hosts = ', '.join(sorted(group['hosts'])) or 'none'
    if group['policy'] == AFFINITY:
        return ('; server group %s (%s) is affinity: its members are on '
                '%s' % (group['name'], group['uuid'], hosts))
    return ('; server group %s (%s) is anti-affinity, at most %d member(s) '
            'a host: its members are on %s'
            % (group['name'], group['uuid'], per_host(group), hosts))


class ServerGroupsMixin:
    """Needs ``self.db``, ``self.clock`` and ``self.quota``."""

    def create_server_group(self, *, name, policy, project_id, user_id,
                            max_server_per_host=None, settings=None):
        """Insert a group; Nova's 403 when the project holds its
        ``server_groups`` limit already."""
        if policy not in POLICIES:
            raise exception.InvalidState(field='server group policy',
                                         value=policy,
                                         expected=', '.join(POLICIES))
        settings = settings or self.quota
        uuid = str(uuidlib.uuid4())

        def txn(conn):
            limit = _limit(conn, project_id, 'server_groups', settings)
            if limit >= 0:
                count = conn.execute(sa.select(sa.func.count()).select_from(
                    G).where(G.c.project_id == project_id)).scalar()
                if count + 1 > limit:
                    raise GroupQuota(project=project_id, count=count,
                                     limit=limit)
            conn.execute(sa.insert(G).values(
                uuid=uuid, name=name, project_id=project_id,
                user_id=user_id, policy=policy,
                max_server_per_host=max_server_per_host,
                created_at=self.clock()))
            return self._group(conn, uuid)
        return self.db.transaction(txn)

    @staticmethod
    def _group(conn, group_uuid):
        rows = _with_members(conn, conn.execute(
            sa.select(G).where(G.c.uuid == group_uuid)).all())
        if not rows:
            raise GroupNotFound(group=group_uuid)
        return rows[0]

    def get_server_group(self, group_uuid):
        """The group with its ``members``; 404 if there is none."""
        return self.db.transaction(self._group, group_uuid, readonly=True)

    def list_server_groups(self, *, project_id=None):
        """Every group (of ``project_id`` if given), oldest first."""
        query = sa.select(G).order_by(G.c.created_at, G.c.id)
        if project_id is not None:
            query = query.where(G.c.project_id == project_id)
        return self.db.transaction(
            lambda conn: _with_members(conn, conn.execute(query).all()),
            readonly=True)

    def delete_server_group(self, group_uuid):
        """Forget the group; its members stay, in no group (as Nova)."""
        def txn(conn):
            group = _locked(conn, group_uuid)
            conn.execute(sa.delete(M).where(M.c.group_id == group['id']))
            conn.execute(sa.delete(G).where(G.c.id == group['id']))
        self.db.transaction(txn)

    def server_group_of(self, instance_uuid):
        """The uuid of the instance's group, or None (2.71's
        ``server_groups``)."""
        return self.db.transaction(lambda conn: conn.execute(
            sa.select(G.c.uuid).join(M, M.c.group_id == G.c.id).where(
                M.c.instance_uuid == instance_uuid)).scalar(), readonly=True)

    def server_groups_in_use(self, project_id):
        """{"server_groups": the project's groups}: what
        os-quota-sets' detail and /limits show in use
        (``server_group_members`` counts per group: 0 there, as Nova)."""
        return self.db.transaction(
            lambda conn: quota_usage(conn, project_id), readonly=True)

    def group_placement(self, instance_uuid):
        """:func:`placement` read alone, to explain a failed placement."""
        return self.db.transaction(
            lambda conn: placement(conn, instance_uuid, lock=False),
            readonly=True)

