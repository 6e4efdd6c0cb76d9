"""Networks on the compute API (issue 23), and a server's addresses.

``/v2.1/os-networks``, as Nova answers it:

* below 2.36, ``GET`` lists and shows the networks the caller may use (its
  project's and the shared ones; an admin: all) in nova-network's shape,
  which is what openstackclient's ``--nic net-id=`` and ``--network`` look
  names up with when there is no Neutron; from 2.36 the route is 404, as
  Nova's proxy APIs are;
* ``POST``, ``DELETE`` and the association actions are 410 Gone, as in
  Nova since nova-network was removed;
* at Tristate's own microversion (2.101) the whole network API: list and
  show with the full detail (``tristate:`` namespace) for everyone it is
  visible to, create and delete for admins.

``/v2.1/servers/{id}/ips[/{network}]``: a server's addresses, as Nova.

The ``networks`` of ``POST /servers`` (Nova's 2.37 semantics) is checked
here (:func:`requested`); the conductor allocates the ports in the
create's transaction (common/db/networks.py).
"""

import ipaddress
import uuid as uuidlib

import flask
from oslo_utils import uuidutils

from api import microversion
from api import request
from api import schemas
from common import exception

bp = flask.Blueprint('networks', __name__, url_prefix='/v2.1')
V = microversion.APIVersion
PROXY_REMOVED = V(2, 36)
RULE_READ = 'tristate:networks:index'
RULE_MANAGE = 'tristate:networks:manage'
_FULL_KEYS = ('bridge', 'libvirt_network', 'cidr', 'gateway', 'dns',
              'allocation_start', 'allocation_end', 'ipv6_cidr',
              'ipv6_gateway', 'mtu', 'project_id')
CREATE = {
    'type': 'object', 'required': ['network'], 'additionalProperties': False,
    'properties': {'network': {
        'type': 'object', 'required': ['name', 'cidr'],
        'additionalProperties': False,
        'properties': {
            'name': {'type': 'string', 'minLength': 1, 'maxLength': 255},
            'bridge': {'type': ['string', 'null'], 'maxLength': 15},
            'libvirt_network': {'type': ['string', 'null'],
                                'maxLength': 255},
            'cidr': {'type': 'string', 'maxLength': 64},
            'gateway': {'type': ['string', 'null'], 'maxLength': 64},
            'dns': {'type': 'array', 'maxItems': 8,
                    'items': {'type': 'string', 'maxLength': 64}},
            'allocation_start': {'type': ['string', 'null'],
                                 'maxLength': 64},
            'allocation_end': {'type': ['string', 'null'], 'maxLength': 64},
            'ipv6_cidr': {'type': ['string', 'null'], 'maxLength': 64},
            'ipv6_gateway': {'type': ['string', 'null'], 'maxLength': 64},
            'mtu': {'type': ['integer', 'null']},
            'project_id': {'type': ['string', 'null'], 'maxLength': 255},
        }}}}


def _db():
    return request.services().client.statedb


def _full():
    return request.version() >= microversion.TRISTATE


def _legacy_or_404():
    if not _full() and request.version() >= PROXY_REMOVED:
        raise exception.NotFound('The resource could not be found.')


def _gone():
    """Nova's answer to nova-network's verbs; the body is read first (a
    body that is not sound JSON is a 400 naming what is wrong, as on every
    route)."""
    request.json_body(schemas.ANYTHING)
    flask.abort(410)


# --- os-networks ---------------------------------------------------------------

def legacy_view(net, admin):
    """nova-network's view of a network (what Nova answered below 2.36)."""
    cidr = ipaddress.ip_network(net['cidr'])
    dns = list(net['dns'] or ()) + [None, None]
    body = {'id': net['id'], 'label': net['name'], 'cidr': net['cidr'],
            'netmask': str(cidr.netmask), 'gateway': net['gateway'],
            'broadcast': str(cidr.broadcast_address), 'dns1': dns[0],
            'dns2': dns[1], 'cidr_v6': net['ipv6_cidr'],
            'gateway_v6': net['ipv6_gateway'],
            'netmask_v6': (str(ipaddress.ip_network(
                net['ipv6_cidr']).prefixlen) if net['ipv6_cidr'] else None)}
    if admin:
        body.update({
            'bridge': net['bridge'] or net['libvirt_network'],
            'bridge_interface': None, 'created_at': net['created_at']
            and net['created_at'].isoformat(), 'updated_at':
            net['updated_at'] and net['updated_at'].isoformat(),
            'deleted': False, 'deleted_at': None, 'dhcp_server': None,
            'dhcp_start': net['allocation_start'], 'enable_dhcp': True,
            'host': None, 'injected': False, 'mtu': net['mtu'],
            'multi_host': True, 'priority': None,
            'project_id': net['project_id'], 'rxtx_base': None,
            'share_address': net['project_id'] is None, 'vlan': None,
            'vpn_private_address': None, 'vpn_public_address': None,
            'vpn_public_port': None})
    return body


def full_view(net, used=None):
    """Tristate's view (2.101): every field of the network."""
    body = {'id': net['id'], 'name': net['name']}
    body.update({k: net[k] for k in _FULL_KEYS})
    body['shared'] = net['project_id'] is None
    body['created_at'] = net['created_at'] and net['created_at'].isoformat()
    body['updated_at'] = net['updated_at'] and net['updated_at'].isoformat()
    if used is not None:
        body['tristate:used_ips'] = used
    return body


def _view(net, *, used=None):
    if _full():
        return full_view(net, used)
    return legacy_view(net, request.context().is_admin)


@bp.get('/os-networks')
def index():
    _legacy_or_404()
    request.authorize(RULE_READ)
    ctx = request.context()
    nets = _db().list_networks(project_id=ctx.project_id,
                               is_admin=ctx.is_admin)
    return {'networks': [_view(n) for n in nets]}


@bp.get('/os-networks/<network_id>')
def show(network_id):
    _legacy_or_404()
    request.authorize(RULE_READ)
    ctx = request.context()
    net = _db().get_network(network_id, project_id=ctx.project_id,
                            is_admin=ctx.is_admin)
    used = _db().network_usage(net['id']) if _full() else None
    return {'network': _view(net, used=used)}


@bp.post('/os-networks')
def create():
    if not _full():
        _gone()
    body = request.json_body(CREATE)['network']
    request.authorize(RULE_MANAGE)
    net = _db().create_network(body, network_id=str(uuidlib.uuid4()))
    resp = flask.jsonify({'network': full_view(net, 0)})
    resp.status_code = 201
    return resp


@bp.delete('/os-networks/<network_id>')
def delete(network_id):
    if not _full():
        _gone()
    request.authorize(RULE_MANAGE)
    net = _db().get_network(network_id)
    _db().delete_network(net['id'])
    return request.no_content(202)


@bp.post('/os-networks/add')
@bp.post('/os-networks/<network_id>/action')
def legacy_actions(network_id=None):
    _gone()


# --- a server's addresses ------------------------------------------------------

def _ips(addresses):
    return {name: [{'version': a['version'], 'addr': a['addr']}
                   for a in entries]
            for name, entries in addresses.items()}


@bp.get('/servers/<server_id>/ips')
def server_ips(server_id):
    inst = request.get_server(server_id, rule='tristate:servers:ips')
    return {'addresses': _ips(request.addresses([inst['uuid']]).get(
        inst['uuid'], {}))}


@bp.get('/servers/<server_id>/ips/<network>')
def server_ips_on(server_id, network):
    inst = request.get_server(server_id, rule='tristate:servers:ips')
    found = _ips(request.addresses([inst['uuid']]).get(inst['uuid'], {}))
    if network not in found:
        raise exception.NotFound('Instance is not a member of specified '
                                 'network')
    return {network: found[network]}


# --- POST /servers' networks (Nova's 2.37 semantics) ---------------------------

# From 2.37 a create may say "auto" or "none", and names networks by uuid.
AUTO_NONE = microversion.APIVersion(2, 37)
_ITEM_KEYS = {'uuid', 'fixed_ip', 'port', 'tag'}


def requested(body, high):
    """What a create's ``networks`` asks the conductor for: None (``auto``),
    ``none``, or ``[{"uuid"[, "fixed_ip"]}]``; a 400 naming what is wrong
    or not supported (``port``: Tristate makes the ports; ``tag``: device
    tags). ``high``: the create's max_count (a fixed IP is one server's).

    As Nova: before 2.37 ``networks`` is a list (or absent), from 2.37
    also ``"auto"`` or ``"none"``, and a listed ``uuid`` must be a uuid.
    One deliberate leniency: Nova 2.37 requires ``networks``, Tristate
    takes an absent one as ``auto`` at every microversion. Without
    Neutron, Tempest (and any client that finds networks through Neutron)
    sends none, and a 400 there would only refuse a request whose meaning
    is plain."""
    version = request.version()
    networks = body.get('networks')
    if networks is None:
        return None
    if isinstance(networks, str) and version < AUTO_NONE:
        raise _bad('networks', networks, 'expected a list of {"uuid"[, '
                   '"fixed_ip"]} ("auto" and "none" need microversion 2.37 '
                   'or later)')
    if networks == 'auto':
        return None
    if networks == 'none':
        return 'none'
    if not isinstance(networks, list):
        raise _bad('networks', networks, 'expected "auto", "none" or a list '
                   'of {"uuid": network id[, "fixed_ip": address]}')
    if not networks:
        return 'none'
    out = [_item(index, item, version >= AUTO_NONE)
           for index, item in enumerate(networks)]
    if high > 1 and any('fixed_ip' in n for n in out):
        raise exception.Invalid('max_count cannot be greater than 1 if an '
                                'fixed_ip is specified.')
    return out


def _item(index, item, uuid_format):
    where = 'networks.%d' % index
    if not isinstance(item, dict) or set(item) - _ITEM_KEYS:
        raise _bad(where, item, 'expected {"uuid"[, "fixed_ip"]}')
    for key in ('port', 'tag'):
        if item.get(key) is not None:
            raise _bad('%s.%s' % (where, key), item[key],
                       'Not supported: Tristate makes each server\'s ports '
                       'itself (name the network by uuid)' if key == 'port'
                       else 'Not supported: device tags are not built')
    if not isinstance(item.get('uuid'), str) or not item['uuid']:
        raise _bad(where + '.uuid', item.get('uuid'),
                   'a network id is required')
    if uuid_format and not uuidutils.is_uuid_like(item['uuid']):
        raise _bad(where + '.uuid', item['uuid'], "is not a 'uuid'")
    out = {'uuid': item['uuid']}
    if item.get('fixed_ip') is not None:
        if not isinstance(item['fixed_ip'], str):
            raise _bad(where + '.fixed_ip', item['fixed_ip'],
                       'an IPv4 address')
        out['fixed_ip'] = item['fixed_ip']
    return out


def _bad(field, value, why):
    return exception.Invalid('Invalid input for field/attribute server.%s. '
                             'Value: %r. %s' % (field, value, why))


def security_groups_refused(body):
    """Only the ``default`` security group (what clients send unasked):
    any other is a 400 saying security groups are not built."""
    groups = body.get('security_groups')
    if groups is None:
        return
    if isinstance(groups, list) and all(
            isinstance(g, dict) and g.get('name') == 'default' and set(g) ==
            {'name'} for g in groups):
        return
    raise _bad('security_groups', groups,
               'Not supported yet: security groups are not built; a '
               'server\'s only group is "default" (isolate projects with '
               'their own networks)')
