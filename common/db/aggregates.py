"""Host aggregates and the availability zones they make (issue 25), mixed
into :class:`common.db.api.StateDB`: Nova's ``os-aggregates`` as data.

A host's zone is the ``availability_zone`` metadata of an aggregate it is
in, else ``[DEFAULT] default_availability_zone`` (the caller's ``default``
below). Nova's rules, each checked in the transaction that would break it:
a host is in at most one zone (a second aggregate naming another zone is
refused), an aggregate's zone is never empty, and no change moves a host
that runs instances into another zone. Every change locks the aggregate's
row, then the rows of the hosts it concerns, always in that order (``FOR
UPDATE`` on PostgreSQL; SQLite serialises writers), so two concurrent
changes cannot both pass a check the other breaks.

The scheduler reads zones through :func:`zone_filter`: an ``EXISTS`` on
the metadata index, added to its statement only when a build asks for a
zone (no query of its own, nothing when none is asked).
"""

import uuid as uuidlib

import sqlalchemy as sa

from common import exception
from common.db import models
from common.states import vm

AG = models.Aggregate.__table__
AH = models.AggregateHost.__table__
AM = models.AggregateMetadata.__table__
H = models.Host.__table__
I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)
ZONE_KEY = 'availability_zone'

# Nova's InvalidAggregateAction* messages, by action.
_ADD = 'Cannot add host to aggregate %s. Reason: %s.'
_REMOVE = 'Cannot remove host from aggregate %s. Reason: %s.'
_UPDATE = 'Cannot update aggregate %s. Reason: %s.'
_UPDATE_META = 'Cannot update metadata of aggregate %s. Reason: %s.'


def zone_filter(*, default):
    """The scheduler's filter on hosts (``H``) for the zone bound as
    ``b_zone``: hosts an aggregate puts in it, and, when ``default`` (the
    zone asked is ``default_availability_zone``), hosts no aggregate puts
    in any zone."""
    def in_zone(value_test):
        return sa.exists().where(AH.c.host == H.c.name,
                                 AM.c.aggregate_id == AH.c.aggregate_id,
                                 AM.c.key == ZONE_KEY, value_test)
    named = in_zone(AM.c.value == sa.bindparam('b_zone'))
    if not default:
        return named
    return sa.or_(named, ~in_zone(sa.true()))


def _zones_of(conn, hosts):
    """{host: zone} of those of ``hosts`` an aggregate puts in a zone
    (None: every host)."""
    query = sa.select(AH.c.host, AM.c.value).join(
        AM, AM.c.aggregate_id == AH.c.aggregate_id).where(AM.c.key == ZONE_KEY)
    if hosts is not None:
        query = query.where(AH.c.host.in_(list(hosts)))
    return {row.host: row.value for row in conn.execute(query)}


def _hosts_zones(conn, hosts, *, but=None):
    """{host: {zones}} from the aggregates other than ``but``."""
    query = sa.select(AH.c.host, AM.c.value).join(
        AM, AM.c.aggregate_id == AH.c.aggregate_id).where(
            AM.c.key == ZONE_KEY, AH.c.host.in_(list(hosts)))
    if but is not None:
        query = query.where(AH.c.aggregate_id != but)
    found = {}
    for row in conn.execute(query):
        found.setdefault(row.host, set()).add(row.value)
    return found


def _instances_on(conn, hosts):
    return conn.execute(sa.select(sa.func.count()).select_from(I).where(
        I.c.host.in_(list(hosts)), I.c.vm_state != vm.HARD_DELETED)).scalar()


def _locked(conn, aggregate_id):
    """The aggregate's row, locked for this transaction; 404 if none."""
    row = conn.execute(sa.select(AG).where(AG.c.id == aggregate_id)
                       .with_for_update()).first()
    if row is None:
        raise exception.NotFound('Aggregate %s could not be found.'
                                 % aggregate_id)
    return dict(row._mapping)


def _lock_hosts(conn, hosts):
    if hosts:
        conn.execute(sa.select(H.c.name).where(H.c.name.in_(list(hosts)))
                     .order_by(H.c.name).with_for_update()).all()


def _hosts_of(conn, aggregate_id):
    return [r.host for r in conn.execute(
        sa.select(AH.c.host).where(AH.c.aggregate_id == aggregate_id)
        .order_by(AH.c.host))]


def _metadata_of(conn, aggregate_id):
    return {r.key: r.value for r in conn.execute(
        sa.select(AM.c.key, AM.c.value).where(
            AM.c.aggregate_id == aggregate_id).order_by(AM.c.key))}


def _whole(conn, row):
    found = dict(row)
    found['hosts'] = _hosts_of(conn, row['id'])
    found['metadata'] = _metadata_of(conn, row['id'])
    found['availability_zone'] = found['metadata'].get(ZONE_KEY)
    return found


def _check_zone(conn, aggregate, new_zone, hosts, template,
                check_instances):
    """Nova's is_safe_to_update_az: ``new_zone`` (the metadata's
    ``availability_zone`` being set) is not empty, no host of ``hosts``
    is in another zone through another aggregate, and (``check_instances``)
    no host that runs instances changes zone."""
    ident = aggregate['id']
    if not new_zone:
        raise exception.Invalid(template % (
            ident, 'Aggregate %s does not support empty named availability '
            'zone' % aggregate['name']))
    others = _hosts_zones(conn, hosts, but=ident)
    conflicting = sorted({z for zones in others.values() for z in zones
                          if z != new_zone})
    if conflicting:
        raise _refused(template, ident, 'One or more hosts already in '
                       'availability zone(s) %s' % conflicting)
    current = _metadata_of(conn, ident).get(ZONE_KEY)
    if check_instances and current != new_zone and hosts and _instances_on(
            conn, hosts):
        raise _refused(template, ident, 'One or more hosts contain instances '
                       'in this zone')


def _refused(template, ident, reason):
    """Nova answers a refused add or remove with 409, the others 400."""
    cls = exception.Conflict if template in (_ADD, _REMOVE) else (
        exception.Invalid)
    return cls(template % (ident, reason))


def _moves_instances(conn, host, old_zone, new_zone):
    count = _instances_on(conn, [host])
    if count and old_zone != new_zone:
        return (
            "The host cannot be %%s the aggregate as the availability zone "
            "of the host would change from '%s' to '%s' but the host "
            "already has %d instance(s). Changing the AZ of an existing "
            "instance is not supported by this action. Move the instances "
            "away from this host then try again. If you need to move the "
            "instances between AZs then you can use shelve_offload and "
            "unshelve to achieve this." % (old_zone, new_zone, count))
    return None


class AggregatesMixin:
    """Needs ``self.db`` and ``self.clock``."""

    def list_aggregates(self):
        def txn(conn):
            return [_whole(conn, dict(r._mapping)) for r in conn.execute(
                sa.select(AG).order_by(AG.c.id))]
        return self.db.transaction(txn, readonly=True)

    def get_aggregate(self, aggregate_id):
        def txn(conn):
            row = conn.execute(sa.select(AG).where(
                AG.c.id == aggregate_id)).first()
            if row is None:
                raise exception.NotFound('Aggregate %s could not be found.'
                                         % aggregate_id)
            return _whole(conn, dict(row._mapping))
        return self.db.transaction(txn, readonly=True)

    def host_zones(self, hosts=None):
        """{host: zone} of the hosts an aggregate puts in a zone (of
        ``hosts``, or all); any other host is in the default zone."""
        return self.db.transaction(_zones_of, hosts, readonly=True)

    def create_aggregate(self, name, zone=None):
        def txn(conn):
            self._refuse_taken_name(conn, name)
            now = self.clock()
            ident = conn.execute(sa.insert(AG).values(
                uuid=str(uuidlib.uuid4()), name=name, created_at=now,
                updated_at=None).returning(AG.c.id)).scalar()
            if zone:
                conn.execute(sa.insert(AM).values(
                    aggregate_id=ident, key=ZONE_KEY, value=zone))
            return _whole(conn, _locked(conn, ident))
        return self.db.transaction(txn)

    @staticmethod
    def _refuse_taken_name(conn, name, but=None):
        query = sa.select(AG.c.id).where(AG.c.name == name)
        if but is not None:
            query = query.where(AG.c.id != but)
        if conn.execute(query).first() is not None:
            raise exception.Conflict('Aggregate %s already exists.' % name)

    def update_aggregate(self, aggregate_id, changes):
        """``changes``: ``name`` and/or ``availability_zone``, as Nova's
        PUT: a zone is metadata, checked as set_metadata checks it."""
        def txn(conn):
            found = _locked(conn, aggregate_id)
            values = {'updated_at': self.clock()}
            if 'name' in changes:
                self._refuse_taken_name(conn, changes['name'],
                                        but=aggregate_id)
                values['name'] = changes['name']
            conn.execute(sa.update(AG).where(AG.c.id == aggregate_id)
                         .values(**values))
            if ZONE_KEY in changes:
                self._set_metadata(conn, found,
                                   {ZONE_KEY: changes[ZONE_KEY]}, _UPDATE)
            return _whole(conn, _locked(conn, aggregate_id))
        return self.db.transaction(txn)

    def set_aggregate_metadata(self, aggregate_id, metadata):
        """Nova's set_metadata: each key set, or deleted when its value
        is None."""
        def txn(conn):
            found = _locked(conn, aggregate_id)
            self._set_metadata(conn, found, metadata, _UPDATE_META)
            conn.execute(sa.update(AG).where(AG.c.id == aggregate_id)
                         .values(updated_at=self.clock()))
            return _whole(conn, _locked(conn, aggregate_id))
        return self.db.transaction(txn)

    @staticmethod
    def _set_metadata(conn, aggregate, metadata, template):
        ident = aggregate['id']
        if ZONE_KEY in metadata:
            hosts = _hosts_of(conn, ident)
            _lock_hosts(conn, hosts)
            _check_zone(conn, aggregate, metadata[ZONE_KEY], hosts,
                        template, check_instances=True)
        for key, value in metadata.items():
            conn.execute(sa.delete(AM).where(AM.c.aggregate_id == ident,
                                             AM.c.key == key))
            if value is not None:
                conn.execute(sa.insert(AM).values(aggregate_id=ident,
                                                  key=key, value=value))

    def delete_aggregate(self, aggregate_id):
        def txn(conn):
            _locked(conn, aggregate_id)
            if _hosts_of(conn, aggregate_id):
                raise exception.Invalid(_REMOVE % (
                    aggregate_id, 'Host aggregate is not empty'))
            conn.execute(sa.delete(AM).where(
                AM.c.aggregate_id == aggregate_id))
            conn.execute(sa.delete(AG).where(AG.c.id == aggregate_id))
        self.db.transaction(txn)

    def aggregate_add_host(self, aggregate_id, host):
        def txn(conn):
            found = _locked(conn, aggregate_id)
            _lock_hosts(conn, [host])
            if conn.execute(sa.select(H.c.name).where(
                    H.c.name == host)).first() is None:
                raise exception.HostNotFound(
                    'Compute host %s could not be found.' % host)
            if host in _hosts_of(conn, aggregate_id):
                raise exception.Conflict('Aggregate %s already has host %s.'
                                         % (aggregate_id, host))
            zone = _metadata_of(conn, aggregate_id).get(ZONE_KEY)
            if zone is not None:
                _check_zone(conn, found, zone, [host], _ADD,
                            check_instances=False)
                old = _zones_of(conn, [host]).get(host)
                moves = _moves_instances(conn, host, old, zone)
                if moves:
                    raise exception.Conflict(_ADD % (aggregate_id,
                                                     moves % 'added to'))
            conn.execute(sa.insert(AH).values(aggregate_id=aggregate_id,
                                              host=host))
            return _whole(conn, found)
        return self.db.transaction(txn)

    def aggregate_remove_host(self, aggregate_id, host):
        def txn(conn):
            found = _locked(conn, aggregate_id)
            _lock_hosts(conn, [host])
            if host not in _hosts_of(conn, aggregate_id):
                raise exception.NotFound(
                    'Cannot remove host %s in aggregate %s'
                    % (host, aggregate_id))
            zone = _metadata_of(conn, aggregate_id).get(ZONE_KEY)
            if zone is not None:
                others = _hosts_zones(conn, [host], but=aggregate_id)
                new = next(iter(sorted(others.get(host, ()))), None)
                moves = _moves_instances(conn, host, zone, new)
                if moves:
                    raise exception.Conflict(_REMOVE % (
                        aggregate_id, moves % 'removed from'))
            conn.execute(sa.delete(AH).where(AH.c.aggregate_id == aggregate_id,
                                             AH.c.host == host))
            return _whole(conn, found)
        return self.db.transaction(txn)

    @staticmethod
    def forget_host_in_aggregates(conn, host):
        """A deleted host leaves its aggregates (in the delete's
        transaction)."""
        conn.execute(sa.delete(AH).where(AH.c.host == host))
