"""Networks, ports and fixed addresses (issue 23): the address management.

An admin defines networks (:meth:`NetworksMixin.create_network`): a bridge
or libvirt network, an IPv4 subnet with its gateway, DNS servers and the
range addresses are handed out from, an optional IPv6 subnet, an MTU,
shared or owned by one project. A new server gets one port per network it
asked for (Nova's 2.37 ``networks``: ``auto``, ``none`` or a list of
``{"uuid"[, "fixed_ip"]}``), **in the create's own transaction**
(:meth:`~NetworksMixin._allocate_ports`, called by
:meth:`common.db.api.StateDB.create_instance`), and gives them back in the
hard delete's (:meth:`~NetworksMixin._free_ports`).

Uniqueness is the database's: a port's MAC is unique (``uq_ports_mac``),
an address unique per network (``fixed_ips``' primary key). The allocator
picks a candidate and inserts it with ``ON CONFLICT DO NOTHING`` (SQLite
and PostgreSQL): no row inserted means someone holds it, and it tries
another. Candidates are drawn at random from the allocation range, so that
concurrent creates on PostgreSQL rarely pick the same address and never
wait on each other's uncommitted rows; after a few misses it reads the
addresses held on the network once and draws from the free ones, until
none is left (:class:`~common.exception.NoFreeAddress`: the build is
buried with that reason). On SQLite writers are serialised, so the first
draw from a network that is not nearly full succeeds.

IPv6: a port's address on the network's IPv6 subnet is derived from its
MAC (modified EUI-64, as SLAAC does), so it is unique when the MAC is.
"""

import ipaddress
import random
import uuid as uuidlib

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from common import exception
from common import secgroups
from common.db import models
from common.db import prepared
from common.db.prepared import bind

N = models.Network.__table__
P = models.Port.__table__
F = models.FixedIP.__table__

# Random draws before reading what is held (a network far from full
# almost always succeeds at the first).
RANDOM_DRAWS = 3
# Bound on the inserts tried from the free list (each miss means another
# transaction took that address: the list shrinks with every miss).
MAX_MISSES = 64
MAC_PREFIX = 'fa:16:3e'
AUTO, NONE = 'auto', 'none'

_NETWORK = prepared.Prepared(sa.select(N).where(N.c.id == bind('id')))
_NETWORK_BY_NAME = prepared.Prepared(
    sa.select(N).where(N.c.name == bind('name')))
_VISIBLE = prepared.Prepared(sa.select(N).where(sa.or_(
    N.c.project_id.is_(None), N.c.project_id == bind('project_id'))
).order_by(N.c.name))
_HELD_V4 = prepared.Prepared(sa.select(F.c.address).where(
    F.c.network_id == bind('network_id'), F.c.version == 4))
_PORT_IDS = sa.select(P.c.id).where(
    P.c.instance_uuid == bind('instance_uuid')).scalar_subquery()
_FREE_IPS = prepared.Prepared(sa.delete(F).where(F.c.port_id.in_(_PORT_IDS)))
_FREE_PORTS = prepared.Prepared(sa.delete(P).where(
    P.c.instance_uuid == bind('instance_uuid')))
_PORT_COLUMNS = ('id', 'instance_uuid', 'network_id', 'mac', 'position',
                 'created_at')
_IP_COLUMNS = ('network_id', 'address', 'port_id', 'version')
_DIALECTS = {'postgresql': postgresql, 'sqlite': sqlite}


def _insert_or_nothing(table, columns, dialect):
    """INSERT ... ON CONFLICT DO NOTHING, prepared once per dialect: a
    row that breaks a unique constraint is not inserted (rowcount 0), and
    the transaction goes on (PostgreSQL would abort it on an error)."""
    def build():
        stmt = _DIALECTS[dialect].insert(table).values(
            {c: bind(c, table.c[c].type) for c in columns})
        return stmt.on_conflict_do_nothing()
    return prepared.cached((table.name + '.insert_or_nothing', dialect),
                           build)


def _insert(conn, table, columns, values):
    stmt = _insert_or_nothing(table, columns, conn.dialect.name)
    return stmt.run(conn, **values).rowcount == 1


def random_mac():
    tail = random.getrandbits(24)
    return '%s:%02x:%02x:%02x' % (MAC_PREFIX, tail >> 16, (tail >> 8) & 255,
                                  tail & 255)


def eui64(cidr, mac):
    """The address of ``mac`` on the IPv6 subnet ``cidr`` (modified
    EUI-64), as text."""
    net = ipaddress.IPv6Network(cidr)
    octets = [int(b, 16) for b in mac.split(':')]
    octets[0] ^= 2
    iid = octets[:3] + [0xff, 0xfe] + octets[3:]
    return str(net[int.from_bytes(bytes(iid), 'big')])


# --- what a network is ------------------------------------------------------------

def _address(value, net, field):
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        raise exception.Invalid(reason='%s: %r is not an IP address'
                                % (field, value)) from None
    if addr not in net:
        raise exception.Invalid(reason='%s: %s is not in %s'
                                % (field, addr, net))
    return addr


def _subnet(value, version, field):
    try:
        net = ipaddress.ip_network(value, strict=True)
    except (ValueError, TypeError):
        raise exception.Invalid(reason='%s: %r is not an IPv%d subnet in CIDR '
                                'notation (e.g. %s)' % (
                                    field, value, version, '192.0.2.0/24'
                                    if version == 4 else '2001:db8::/64')
                                ) from None
    if net.version != version:
        raise exception.Invalid(reason='%s: %s is not an IPv%d subnet'
                                % (field, value, version))
    if net.num_addresses < (4 if version == 4 else 2 ** 64):
        raise exception.Invalid(reason='%s: %s is too small (IPv4: /30 or '
                                'larger; IPv6: /64 or larger)' % (field, net))
    return net


def validate_network(values):
    """The row of a new network from an admin's ``values`` (name, cidr and
    the optional bridge, libvirt_network, gateway, dns, allocation_start,
    allocation_end, ipv6_cidr, ipv6_gateway, mtu, project_id), with the
    defaults filled in; an :class:`~common.exception.Invalid` naming the
    first field that is wrong."""
    known = {'name', 'bridge', 'libvirt_network', 'cidr', 'gateway', 'dns',
             'allocation_start', 'allocation_end', 'ipv6_cidr',
             'ipv6_gateway', 'mtu', 'project_id'}
    unknown = sorted(set(values) - known)
    if unknown:
        raise exception.Invalid(reason='unknown network field %s; expected '
                                'some of %s' % (unknown[0],
                                                ', '.join(sorted(known))))
    name = values.get('name')
    if not isinstance(name, str) or not name.strip() or len(name) > 255:
        raise exception.Invalid(reason='name: 1-255 characters, got %r'
                                % (name,))
    if bool(values.get('bridge')) == bool(values.get('libvirt_network')):
        raise exception.Invalid(reason='bridge or libvirt_network: give '
                                'exactly one (the Linux bridge every '
                                'hypervisor has, or a libvirt network)')
    net = _subnet(values.get('cidr'), 4, 'cidr')
    # The host addresses' ends (_subnet refuses /31 and /32, whose every
    # address is a host); never a list of a big subnet's addresses.
    first, last = net[1], net[-2]
    gateway = (_address(values['gateway'], net, 'gateway')
               if values.get('gateway') else first)
    start = _address(values.get('allocation_start') or first, net,
                     'allocation_start')
    end = _address(values.get('allocation_end') or last, net,
                   'allocation_end')
    if start > end or start in (net.network_address, net.broadcast_address) \
            or end in (net.network_address, net.broadcast_address):
        raise exception.Invalid(reason='allocation_start, allocation_end: '
                                '%s-%s is not a range of host addresses of %s'
                                % (start, end, net))
    row = {'name': name.strip(), 'bridge': values.get('bridge') or None,
           'libvirt_network': values.get('libvirt_network') or None,
           'cidr': str(net), 'gateway': str(gateway),
           'dns': _dns(values.get('dns')), 'allocation_start': str(start),
           'allocation_end': str(end), 'mtu': _mtu(values.get('mtu')),
           'project_id': values.get('project_id') or None,
           'ipv6_cidr': None, 'ipv6_gateway': None}
    if values.get('ipv6_cidr'):
        net6 = _subnet(values['ipv6_cidr'], 6, 'ipv6_cidr')
        row['ipv6_cidr'] = str(net6)
        row['ipv6_gateway'] = str(
            _address(values['ipv6_gateway'], net6, 'ipv6_gateway')
            if values.get('ipv6_gateway') else net6[1])
    elif values.get('ipv6_gateway'):
        raise exception.Invalid(reason='ipv6_gateway needs ipv6_cidr')
    return row


def _dns(value):
    if value in (None, ''):
        return []
    if isinstance(value, str):
        value = [v for v in value.replace(',', ' ').split() if v]
    if not isinstance(value, list):
        raise exception.Invalid(reason='dns: a list of IP addresses, got %r'
                                % (value,))
    out = []
    for item in value:
        try:
            out.append(str(ipaddress.ip_address(item)))
        except ValueError:
            raise exception.Invalid(reason='dns: %r is not an IP address'
                                    % (item,)) from None
    return out


def _mtu(value):
    if value in (None, ''):
        return None
    try:
        mtu = int(value)
    except (TypeError, ValueError):
        mtu = 0
    if not 576 <= mtu <= 65536 or isinstance(value, bool):
        raise exception.Invalid(reason='mtu: a whole number of bytes '
                                'between 576 and 65536, got %r' % (value,))
    return mtu


def port_network(net):
    """The network as a build task's ``params['ports']`` carries it."""
    return {'id': net['id'], 'name': net['name'], 'bridge': net['bridge'],
            'libvirt_network': net['libvirt_network'], 'mtu': net['mtu'],
            'cidr': net['cidr'], 'gateway': net['gateway'],
            'dns': list(net['dns'] or ()), 'ipv6_cidr': net['ipv6_cidr'],
            'ipv6_gateway': net['ipv6_gateway']}


class NetworksMixin:
    """:class:`common.db.api.StateDB`'s networks, ports and addresses."""

    # --- networks (admin) --------------------------------------------------------

    def create_network(self, values, *, network_id):
        row = dict(validate_network(values), id=network_id,
                   created_at=self.clock(), updated_at=None)

        def txn(conn):
            if _NETWORK_BY_NAME.one(conn, name=row['name']) is not None:
                raise exception.Conflict('A network named %s exists already'
                                         % row['name'])
            conn.execute(sa.insert(N).values(**row))
            return dict(row)
        return self.db.transaction(txn)

    def get_network(self, ref, *, project_id=None, is_admin=True):
        """The network of id (or name) ``ref`` that the caller may see."""
        def txn(conn):
            net = (_NETWORK.one(conn, id=ref)
                   or _NETWORK_BY_NAME.one(conn, name=ref))
            if net is None or not (is_admin or net['project_id'] in (
                    None, project_id)):
                raise exception.NetworkNotFound(network=ref)
            return net
        return self.db.transaction(txn, readonly=True)

    def list_networks(self, *, project_id=None, is_admin=True):
        query = sa.select(N).order_by(N.c.name, N.c.id)
        if not is_admin:
            query = query.where(sa.or_(N.c.project_id.is_(None),
                                       N.c.project_id == project_id))
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(query)],
            readonly=True)

    def network_usage(self, network_id):
        """How many IPv4 addresses of the network are held."""
        query = sa.select(sa.func.count()).select_from(F).where(
            F.c.network_id == network_id, F.c.version == 4)
        return self.db.transaction(lambda conn: conn.execute(query).scalar(),
                                   readonly=True)

    def delete_network(self, network_id):
        """Delete a network no port is on (a 409 naming how many are)."""
        def txn(conn):
            if _NETWORK.one(conn, id=network_id) is None:
                raise exception.NetworkNotFound(network=network_id)
            ports = conn.execute(sa.select(sa.func.count()).select_from(
                P).where(P.c.network_id == network_id)).scalar()
            if ports:
                raise exception.NetworkInUse(network=network_id, ports=ports)
            conn.execute(sa.delete(N).where(N.c.id == network_id))
        return self.db.transaction(txn)

    # --- which networks a create asks for ------------------------------------------

    def _resolve_networks(self, conn, ctx, requested, default):
        """``[(network row, fixed_ip or None)]`` for a create's
        ``networks`` (``auto``/None, ``none``, or a list of ``{"uuid",
        "fixed_ip"}``), in its order; ``default``: ``[network]
        default_network``."""
        if requested == NONE:
            return []
        if requested in (None, AUTO):
            return [(net, None) for net in self._auto(conn, ctx, default)]
        out = []
        for item in requested:
            net = _NETWORK.one(conn, id=item['uuid'])
            if net is None or not (ctx.is_admin or net['project_id'] in (
                    None, ctx.project_id)):
                raise exception.Invalid('Network %s could not be found.'
                                        % item['uuid'])
            out.append((net, _fixed_ip(item.get('fixed_ip'), net)))
        return out

    @staticmethod
    def _auto(conn, ctx, default):
        if default:
            net = (_NETWORK.one(conn, id=default)
                   or _NETWORK_BY_NAME.one(conn, name=default))
            if net is None:
                raise exception.ServiceUnavailable(
                    reason='[network] default_network %s does not exist: an '
                           'admin must create it or change the option'
                           % default)
            return [net]
        visible = _VISIBLE.run(conn, project_id=ctx.project_id or '').rows
        if len(visible) > 1:
            raise exception.NetworkAmbiguous(
                networks=', '.join(n['name'] for n in visible))
        return visible

    # --- allocation, in the create's transaction -----------------------------------

    def _allocate_ports(self, conn, instance_uuid, chosen, now):
        """A port with its addresses on each network of ``chosen`` (as
        :meth:`_resolve_networks` answers), for the build's
        ``params['ports']``. :class:`~common.exception.NoFreeAddress` when
        a network is full (nothing of this instance is left held)."""
        ports = []
        for position, (net, fixed_ip) in enumerate(chosen):
            try:
                ports.append(self._allocate_port(conn, instance_uuid,
                                                 position, net, fixed_ip, now))
            except exception.NoFreeAddress:
                self._free_ports(conn, instance_uuid)
                raise
        return ports

    def _allocate_port(self, conn, instance_uuid, position, net, fixed_ip,
                       now):
        port = {'id': str(uuidlib.uuid4()), 'instance_uuid': instance_uuid,
                'network_id': net['id'], 'position': position,
                'created_at': now}
        for _ in range(MAX_MISSES):
            port['mac'] = random_mac()
            if _insert(conn, P, _PORT_COLUMNS, port):
                break
        else:
            raise exception.Conflict('no unique MAC address found')
        held = {'network_id': net['id'], 'port_id': port['id'], 'version': 4}
        if fixed_ip is not None:
            if not _insert(conn, F, _IP_COLUMNS, dict(held, address=fixed_ip)):
                raise exception.FixedIpInUse(address=fixed_ip,
                                             network=net['name'])
            address = fixed_ip
        else:
            address = self._draw_v4(conn, net, held)
        ips = [{'address': address, 'version': 4}]
        if net['ipv6_cidr']:
            address6 = eui64(net['ipv6_cidr'], port['mac'])
            _insert(conn, F, _IP_COLUMNS, dict(held, address=address6,
                                               version=6))
            ips.append({'address': address6, 'version': 6})
        return {'id': port['id'], 'mac': port['mac'],
                'network': port_network(net), 'fixed_ips': ips,
                'security_groups': [secgroups.DEFAULT]}

    @staticmethod
    def _draw_v4(conn, net, held):
        first = int(ipaddress.IPv4Address(net['allocation_start']))
        last = int(ipaddress.IPv4Address(net['allocation_end']))
        gateway = int(ipaddress.IPv4Address(net['gateway']))
        for _ in range(RANDOM_DRAWS):
            candidate = random.randint(first, last)
            if candidate != gateway and _insert(conn, F, _IP_COLUMNS, dict(
                    held, address=str(ipaddress.IPv4Address(candidate)))):
                return str(ipaddress.IPv4Address(candidate))
        taken = {int(ipaddress.IPv4Address(r['address'])) for r in
                 _HELD_V4.run(conn, network_id=net['id']).rows}
        taken.add(gateway)
        free = [a for a in range(first, last + 1) if a not in taken]
        random.shuffle(free)
        for candidate in free[:MAX_MISSES]:
            address = str(ipaddress.IPv4Address(candidate))
            if _insert(conn, F, _IP_COLUMNS, dict(held, address=address)):
                return address
        raise exception.NoFreeAddress(network=net['name'])

    def _free_ports(self, conn, instance_uuid):
        """Give back every address and port of the instance (the hard
        delete's transaction, a burial's)."""
        _FREE_IPS.run(conn, instance_uuid=instance_uuid)
        _FREE_PORTS.run(conn, instance_uuid=instance_uuid)

    def _requested(self, conn, inst):
        """The networks ``inst`` asked for at its create, as
        :meth:`_resolve_networks` answers (a buried build rebuilt)."""
        out = []
        for item in inst.get('requested_networks') or ():
            net = _NETWORK.one(conn, id=item['network_id'])
            if net is None:
                raise exception.NoFreeAddress(
                    'network %s was deleted' % item['network_id'])
            out.append((net, item.get('fixed_ip')))
        return out

    def allocate_requested(self, ctx, instance_uuid):
        """The ports of a buried build run again (rebuild of a PENDING
        instance, task ``ctx.task_id``): those its create asked for, in
        one transaction guarded by the task. Raises
        :class:`~common.exception.NoFreeAddress` as a create does."""
        def txn(conn):
            inst = self._task_locked(conn, ctx, instance_uuid)
            self._free_ports(conn, instance_uuid)
            return self._allocate_ports(conn, instance_uuid,
                                        self._requested(conn, inst),
                                        self.clock())
        return self.db.transaction(txn)

    # --- reads -----------------------------------------------------------------------

    def ports_of(self, instance_uuid):
        """The instance's ports as a build or rebuild task carries them."""
        return self.db.transaction(
            lambda conn: _ports(conn, [instance_uuid]).get(instance_uuid, []),
            readonly=True)

    def security_groups_of(self, uuids):
        """``{uuid: [group name]}`` of the servers ``uuids`` that have
        ports (the groups of any of their ports, as Nova lists them); a
        server with no port is absent."""
        uuids = list(uuids)
        if not uuids:
            return {}
        query = (sa.select(P.c.instance_uuid, P.c.security_group)
                 .where(P.c.instance_uuid.in_(uuids)))

        def txn(conn):
            out = {}
            for row in conn.execute(query):
                names = out.setdefault(row.instance_uuid, [])
                for name in secgroups.of_column(row.security_group):
                    if name not in names:
                        names.append(name)
            return out
        return self.db.transaction(txn, readonly=True)

    @staticmethod
    def _set_security_groups(conn, instance_uuid, groups):
        """Every port of the instance in ``groups`` (a task's finish,
        in its transaction)."""
        conn.execute(sa.update(P).where(P.c.instance_uuid == instance_uuid)
                     .values(security_group=secgroups.to_column(groups)))

    def addresses_of(self, uuids):
        """``{uuid: {network name: [{"version", "addr", "OS-EXT-IPS:type",
        "OS-EXT-IPS-MAC:mac_addr"}]}}`` for ``uuids``, in one query (a
        page of servers reads them once)."""
        return self.network_views_of(uuids)[0]

    def network_views_of(self, uuids):
        """(:meth:`addresses_of`, :meth:`security_groups_of`) of ``uuids``
        in one query (every port holds an IPv4 address): what a page of
        servers shows of their ports."""
        uuids = list(uuids)
        if not uuids:
            return {}, {}
        query = (sa.select(P.c.instance_uuid, P.c.mac, P.c.security_group,
                           N.c.name, F.c.address, F.c.version)
                 .join(N, N.c.id == P.c.network_id)
                 .join(F, F.c.port_id == P.c.id)
                 .where(P.c.instance_uuid.in_(uuids))
                 .order_by(P.c.instance_uuid, P.c.position, F.c.version))

        def txn(conn):
            out, groups = {}, {}
            for row in conn.execute(query):
                out.setdefault(row.instance_uuid, {}).setdefault(
                    row.name, []).append({
                        'version': row.version, 'addr': row.address,
                        'OS-EXT-IPS:type': 'fixed',
                        'OS-EXT-IPS-MAC:mac_addr': row.mac})
                names = groups.setdefault(row.instance_uuid, [])
                if row.security_group and row.security_group not in names:
                    names.append(row.security_group)
            return out, groups
        return self.db.transaction(txn, readonly=True)

def _fixed_ip(value, net):
    if value is None:
        return None
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        raise exception.Invalid('Invalid fixed IP address (%s)'
                                % value) from None
    cidr = ipaddress.ip_network(net['cidr'])
    if addr.version != 4 or addr not in cidr or addr in (
            cidr.network_address, cidr.broadcast_address,
            ipaddress.ip_address(net['gateway'])):
        raise exception.Invalid(
            'Invalid fixed IP address (%s): not a host address of network '
            '%s (%s, gateway %s); IPv6 addresses are derived from the MAC'
            % (value, net['name'], net['cidr'], net['gateway']))
    return str(addr)


def _ports(conn, uuids):
    """``{uuid: [port as params['ports'] carries it]}``."""
    query = (sa.select(P.c.id, P.c.instance_uuid, P.c.mac,
                       P.c.security_group, N, F.c.address, F.c.version)
             .join(N, N.c.id == P.c.network_id)
             .join(F, F.c.port_id == P.c.id)
             .where(P.c.instance_uuid.in_(list(uuids)))
             .order_by(P.c.instance_uuid, P.c.position, F.c.version))
    out, seen = {}, {}
    for row in conn.execute(query):
        m = row._mapping
        port = seen.get(m[P.c.id])
        if port is None:
            net = {c.name: m[c] for c in N.c}
            port = seen[m[P.c.id]] = {
                'id': m[P.c.id], 'mac': m[P.c.mac],
                'network': port_network(net), 'fixed_ips': [],
                'security_groups': secgroups.of_column(
                    m[P.c.security_group])}
            out.setdefault(m[P.c.instance_uuid], []).append(port)
        port['fixed_ips'].append({'address': m[F.c.address],
                                  'version': m[F.c.version]})
    return out
