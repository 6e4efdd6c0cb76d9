"""The StateDB's flavors (mixed into :class:`common.db.api.StateDB`): the
catalogue Nova's ``/flavors``, ``os-extra_specs`` and ``os-flavor-access``
serve, and that builds and resizes take their sizes from.

A flavor is read by its ``flavorid`` (the id users see). An instance copies
its flavor's sizes into its own row when it is created or resized, so a
flavor deleted later changes no server (and no quota charge). The
configured ``[conductor] flavors`` are inserted by :meth:`seed_flavors`,
once each: ``flavor_seeds`` remembers them, so a configured flavor an admin
deleted stays deleted. A deleted flavor keeps its row (``deleted`` = its
row id, Nova's way of keeping ids and names unique among the others), so
that the servers built with it still link it by its id
(:meth:`~FlavorsMixin.flavor_ids`).
"""

import sqlalchemy as sa

from common import exception
from common.db import models
from common.db import prepared
from common.db import quotas

F = models.Flavor.__table__
X = models.FlavorExtraSpec.__table__
P = models.FlavorProject.__table__
SEEDS = models.FlavorSeed.__table__

# Nova's sort keys, as our columns.
SORT_KEYS = {'created_at': 'created_at', 'description': 'description',
             'disabled': 'disabled', 'ephemeral_gb': 'ephemeral_gb',
             'flavorid': 'flavorid', 'id': 'id', 'is_public': 'is_public',
             'memory_mb': 'memory_mb', 'name': 'name', 'root_gb': 'disk_gb',
             'rxtx_factor': 'rxtx_factor', 'swap': 'swap',
             'updated_at': 'updated_at', 'vcpu_weight': 'id',
             'vcpus': 'vcpus'}


class FlavorExists(exception.Conflict):
    msg_fmt = 'Flavor with %(what)s %(value)s already exists.'


class FlavorAccessExists(exception.Conflict):
    msg_fmt = ('Flavor access already exists for flavor %(flavor_id)s and '
               'project %(project_id)s combination.')


class FlavorAccessNotFound(exception.NotFound):
    msg_fmt = ('Flavor access not found for %(flavor_id)s / %(project_id)s '
               'combination.')


def _not_found(flavorid):
    return exception.NotFound('Flavor %s could not be found.' % flavorid)


LIVE = F.c.deleted == 0


def _row(conn, flavorid):
    row = conn.execute(sa.select(F).where(F.c.flavorid == flavorid,
                                          LIVE)).first()
    if row is None:
        raise _not_found(flavorid)
    return dict(row._mapping)


def _specs(conn, ids):
    found = {i: {} for i in ids}
    if ids:
        for row in conn.execute(sa.select(X).where(X.c.flavor_id.in_(ids))):
            found[row.flavor_id][row.key] = row.value
    return found


def _visible(query, project_id, is_public):
    """Nova's is_public filter: True: public flavors and the private ones
    ``project_id`` may use; False: private ones only; None: all."""
    if is_public is None:
        return query
    if not is_public:
        return query.where(F.c.is_public.is_(False))
    shared = sa.select(P.c.flavor_id).where(P.c.project_id == project_id)
    if project_id is None:
        return query.where(F.c.is_public.is_(True))
    return query.where(sa.or_(F.c.is_public.is_(True), F.c.id.in_(shared)))


def _filtered(query, min_ram, min_disk):
    if min_ram is not None:
        query = query.where(F.c.memory_mb >= min_ram)
    if min_disk is not None:
        query = query.where(F.c.disk_gb >= min_disk)
    return query


# What every build reads, compiled once (common.db.prepared).
_BY_FLAVORID = prepared.Prepared(sa.select(F).where(
    F.c.flavorid == prepared.bind('flavorid', F.c.flavorid.type), LIVE))
_SPECS_OF = prepared.Prepared(sa.select(X.c.key, X.c.value).where(
    X.c.flavor_id == prepared.bind('id', X.c.flavor_id.type)))
_PROJECTS_OF = prepared.Prepared(sa.select(P.c.project_id).where(
    P.c.flavor_id == prepared.bind('id', P.c.flavor_id.type)))
_IDS = prepared.Prepared(sa.select(F.c.name, F.c.flavorid, F.c.deleted)
                         .order_by(F.c.deleted == 0, F.c.id))


class FlavorsMixin:
    """Needs ``self.db`` and ``self.clock``."""

    def seed_flavors(self, flavors):
        """Insert each of ``flavors`` (:class:`common.flavors.Flavor`, id =
        name) that was never seeded; concurrent seeders insert it once."""
        def txn(conn):
            seeded = {r.flavorid for r in conn.execute(sa.select(SEEDS))}
            for flv in flavors:
                if flv.name in seeded:
                    continue
                quotas.insert_new(conn, SEEDS, flavorid=flv.name)
                taken = conn.execute(sa.select(F.c.id).where(sa.or_(
                    F.c.flavorid == flv.name, F.c.name == flv.name),
                    LIVE)).first()
                if taken is None:
                    conn.execute(sa.insert(F).values(_values(
                        flv.name, flv.name, flv.vcpus, flv.memory_mb,
                        flv.disk_gb, now=self.clock())))
        self.db.transaction(txn)

    def get_flavor(self, flavorid, *, projects=False):
        """The flavor and its ``extra_specs`` (and ``projects``, the access
        list); NotFound (404) if there is none. By prepared statements:
        every build reads its flavor, in the API and in the conductor."""
        def txn(conn):
            flv = _BY_FLAVORID.one(conn, flavorid=flavorid)
            if flv is None:
                raise _not_found(flavorid)
            flv['extra_specs'] = {r['key']: r['value'] for r in
                                  _SPECS_OF.run(conn, id=flv['id']).rows}
            if projects:
                flv['projects'] = sorted(r['project_id'] for r in
                                         _PROJECTS_OF.run(conn, id=flv['id'])
                                         .rows)
            return flv
        return self.db.transaction(txn, readonly=True)

    def flavor_ids(self):
        """{name: flavorid} of every flavor, deleted ones too (the flavor
        not deleted wins, then the last deleted): how a server's flavor
        name is shown as an id."""
        def txn(conn):
            return {r['name']: r['flavorid'] for r in _IDS.run(conn).rows}
        return self.db.transaction(txn, readonly=True)

    def find_flavor(self, *, name):
        """The flavor named ``name``, or None."""
        def txn(conn):
            row = conn.execute(sa.select(F).where(F.c.name == name,
                                                  LIVE)).first()
            return None if row is None else dict(row._mapping)
        return self.db.transaction(txn, readonly=True)

    def list_flavors(self, *, project_id=None, is_public=True, min_ram=None,
                     min_disk=None, sort_key='flavorid', sort_dir='asc',
                     limit=None, marker=None):
        """Flavors with their extra specs, Nova's filters and paging
        (``marker``: a flavorid, NotFound if unknown)."""
        column = F.c[SORT_KEYS[sort_key]]
        order = [column.desc() if sort_dir == 'desc' else column.asc(),
                 F.c.id.desc() if sort_dir == 'desc' else F.c.id.asc()]

        def txn(conn):
            query = _filtered(_visible(sa.select(F).where(LIVE), project_id,
                                       is_public),
                              min_ram, min_disk).order_by(*order)
            rows = [dict(r._mapping) for r in conn.execute(query)]
            if marker is not None:
                ids = [r['flavorid'] for r in rows]
                if marker not in ids:
                    raise exception.Invalid('marker [%s] not found' % marker)
                rows = rows[ids.index(marker) + 1:]
            if limit is not None:
                rows = rows[:limit]
            specs = _specs(conn, [r['id'] for r in rows])
            for row in rows:
                row['extra_specs'] = specs[row['id']]
            return rows
        return self.db.transaction(txn, readonly=True)

    def create_flavor(self, *, flavorid, name, vcpus, memory_mb, disk_gb,
                      swap=0, ephemeral_gb=0, rxtx_factor=1.0,
                      is_public=True, description=None):
        def txn(conn):
            for what, value in (('ID', flavorid), ('name', name)):
                column = F.c.flavorid if what == 'ID' else F.c.name
                if conn.execute(sa.select(F.c.id).where(
                        column == value, LIVE)).first() is not None:
                    raise FlavorExists(what=what, value=value)
            conn.execute(sa.insert(F).values(_values(
                flavorid, name, vcpus, memory_mb, disk_gb, now=self.clock(),
                swap=swap, ephemeral_gb=ephemeral_gb, rxtx_factor=rxtx_factor,
                is_public=is_public, description=description)))
        self.db.transaction(txn)
        return self.get_flavor(flavorid)

    def delete_flavor(self, flavorid):
        def txn(conn):
            pk = _row(conn, flavorid)['id']
            conn.execute(sa.delete(X).where(X.c.flavor_id == pk))
            conn.execute(sa.delete(P).where(P.c.flavor_id == pk))
            conn.execute(sa.update(F).where(F.c.id == pk).values(
                deleted=pk, updated_at=self.clock()))
        self.db.transaction(txn)

    def update_flavor_description(self, flavorid, description):
        def txn(conn):
            pk = _row(conn, flavorid)['id']
            conn.execute(sa.update(F).where(F.c.id == pk).values(
                description=description, updated_at=self.clock()))
        self.db.transaction(txn)
        return self.get_flavor(flavorid)

    def set_extra_specs(self, flavorid, specs):
        """Add or replace ``specs`` (strings) of the flavor."""
        def txn(conn):
            pk = _row(conn, flavorid)['id']
            for key, value in specs.items():
                done = conn.execute(sa.update(X).where(
                    X.c.flavor_id == pk, X.c.key == key).values(value=value))
                if not done.rowcount:
                    conn.execute(sa.insert(X).values(flavor_id=pk, key=key,
                                                     value=value))
        self.db.transaction(txn)

    def delete_extra_spec(self, flavorid, key):
        def txn(conn):
            pk = _row(conn, flavorid)['id']
            done = conn.execute(sa.delete(X).where(X.c.flavor_id == pk,
                                                   X.c.key == key))
            if not done.rowcount:
                raise exception.NotFound(
                    'Flavor %s has no extra specs with key %s.'
                    % (flavorid, key))
        self.db.transaction(txn)

    def add_flavor_access(self, flavorid, project_id):
        def txn(conn):
            pk = _row(conn, flavorid)['id']
            if conn.execute(sa.select(P).where(
                    P.c.flavor_id == pk,
                    P.c.project_id == project_id)).first() is not None:
                raise FlavorAccessExists(flavor_id=flavorid,
                                         project_id=project_id)
            conn.execute(sa.insert(P).values(flavor_id=pk,
                                             project_id=project_id))
        self.db.transaction(txn)
        return self.get_flavor(flavorid, projects=True)

    def remove_flavor_access(self, flavorid, project_id):
        def txn(conn):
            pk = _row(conn, flavorid)['id']
            done = conn.execute(sa.delete(P).where(
                P.c.flavor_id == pk, P.c.project_id == project_id))
            if not done.rowcount:
                raise FlavorAccessNotFound(flavor_id=flavorid,
                                           project_id=project_id)
        self.db.transaction(txn)
        return self.get_flavor(flavorid, projects=True)


def _values(flavorid, name, vcpus, memory_mb, disk_gb, *, now, swap=0,
            ephemeral_gb=0, rxtx_factor=1.0, is_public=True,
            description=None):
    return {'flavorid': flavorid, 'name': name, 'vcpus': vcpus,
            'memory_mb': memory_mb, 'disk_gb': disk_gb, 'swap': swap,
            'ephemeral_gb': ephemeral_gb, 'rxtx_factor': rxtx_factor,
            'is_public': is_public, 'disabled': False,
            'description': description, 'created_at': now,
            'updated_at': None}
