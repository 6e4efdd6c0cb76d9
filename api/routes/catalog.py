"""``/os-hypervisors``: one hypervisor per host, as Nova answers (admin).

    GET /os-hypervisors[/detail]       (2.33: limit, marker; 2.53:
                                        hypervisor_hostname_pattern, with_servers)
    GET /os-hypervisors/{id}           (2.53: with_servers)
    GET /os-hypervisors/{id}/uptime    (before 2.88)
    GET /os-hypervisors/statistics     (before 2.88)
    GET /os-hypervisors/{pattern}/search   (before 2.53)
    GET /os-hypervisors/{pattern}/servers  (before 2.53)

Ids are Nova's: the host's number before 2.53, a uuid derived from its
name from 2.53 (the service's likewise, :mod:`api.routes.services`). A
pattern matches every host whose name contains it. The bodies are
:func:`api.views.hypervisor`'s, with these ids and Nova's changes of the
detailed body (2.28, 2.88); from 2.101 the capacity keys Nova dropped at
2.88 are in ``tristate:capacity``. ``uptime`` is how long the
host's agent has been running: Tristate does not read the host's own.
"""

import json
import uuid as uuidlib

import flask
from oslo_utils import strutils
from oslo_utils import uuidutils

from api import microversion
from api import request
from api import views
from api.routes import services
from common import exception

bp = flask.Blueprint('catalog', __name__, url_prefix='/v2.1')

V = microversion.APIVersion
CPU_INFO_OBJECT = V(2, 28)
PAGING = V(2, 33)
UUIDS = V(2, 53)
SERVERS_ALWAYS = V(2, 75)
NO_STATISTICS = V(2, 88)
_NAMESPACE = uuidlib.UUID('0b8e6f6c-4f8e-4a55-8f3c-1b9f1ad1c0d4')


def hypervisor_uuid(name):
    return str(uuidlib.uuid5(_NAMESPACE, name))


def _hosts():
    request.authorize('tristate:hypervisors:index')
    client, ctx = request.services().client, request.context()
    return sorted(client.list_hosts(ctx), key=lambda h: h['number'] or 0)


def _instances(host=None):
    statedb = request.services().client.statedb
    return statedb.list_instances(host=host)


def _body(host, instances, *, detail, servers=None):
    """views.hypervisor's body, with Nova's ids at this version."""
    version = request.version()
    body = views.hypervisor(host, instances, detail=detail, version=version)
    new_ids = version >= UUIDS
    body['id'] = hypervisor_uuid(host['name']) if new_ids else host['number']
    if 'service' in body:
        body['service'] = dict(
            body['service'],
            id=services.service_uuid(services.COMPUTE, host['name'])
            if new_ids else host['number'])
    if detail:
        _detail_keys(body, host, version)
    if servers is not None and (servers or version >= SERVERS_ALWAYS):
        body['servers'] = [{'name': i['name'], 'uuid': i['uuid']}
                           for i in servers]
    return body


# Gone from the detailed body at 2.88 (Nova's placement has them).
_BEFORE_2_88 = ('vcpus', 'memory_mb', 'local_gb', 'vcpus_used',
                'memory_mb_used', 'local_gb_used', 'free_ram_mb',
                'free_disk_gb', 'current_workload', 'running_vms',
                'disk_available_least', 'cpu_info')


def _detail_keys(body, host, version):
    """Nova's changes of the detailed body: ``cpu_info`` an object from
    2.28, the capacity keys replaced by ``uptime`` at 2.88 (whatever
    api.views gave, these hold); from 2.101 the capacity is back as
    ``tristate:capacity``."""
    if version >= NO_STATISTICS:
        removed = {key: body.pop(key) for key in _BEFORE_2_88 if key in body}
        body['uptime'] = _uptime(host) if host['up'] else None
        if version >= microversion.PENDING:
            # Tristate's own version keeps the capacity, in its namespace
            removed.pop('cpu_info', None)
            body['tristate:capacity'] = removed
        return
    if version >= CPU_INFO_OBJECT and isinstance(body.get('cpu_info'), str):
        body['cpu_info'] = json.loads(body['cpu_info'] or '{}')
    if 'free_disk_gb' in body:
        body.setdefault('disk_available_least', body['free_disk_gb'])


def _uptime(host):
    started = host.get('agent_started_at')
    if not started:
        return 'tristate-compute-agent up'
    return 'tristate-compute-agent up since %s' % views.isotime(started)


def _matching(hosts, pattern):
    found = [h for h in hosts if pattern in h['name']]
    if not found:
        raise exception.NotFound("No hypervisor matching '%s' could be "
                                 "found." % pattern)
    return found


def _page(hosts, args):
    """Nova's paging (2.33): limit, and marker (an id at this version)."""
    marker, limit = args.get('marker'), args.get('limit')
    if marker is not None:
        ids = [str(_ident(h)) for h in hosts]
        if marker not in ids:
            raise exception.Invalid('marker [%s] not found' % marker)
        hosts = hosts[ids.index(marker) + 1:]
    if limit is not None:
        try:
            limit = int(limit)
            if limit < 0:
                raise ValueError(limit)
        except ValueError:
            raise exception.Invalid(
                'Invalid input for query parameters limit. Value: %s. It '
                'must be a non-negative integer' % limit) from None
        hosts = hosts[:limit]
    return hosts, limit


def _ident(host):
    if request.version() >= UUIDS:
        return hypervisor_uuid(host['name'])
    return host['number']


def _with_servers(args):
    try:
        return strutils.bool_from_string(args.get('with_servers', False),
                                         strict=True)
    except ValueError:
        raise exception.Invalid(
            "Invalid input for query parameters with_servers. Value: %s. "
            "It must be a boolean" % args['with_servers']) from None


def _hypervisors(detail):
    hosts, args, version = _hosts(), flask.request.args, request.version()
    pattern, with_servers, limit = None, False, None
    if version >= UUIDS:
        pattern = args.get('hypervisor_hostname_pattern')
        with_servers = _with_servers(args)
    if pattern is not None:
        if 'limit' in args or 'marker' in args:
            raise exception.Invalid('Paging over hypervisors with the '
                                    'hypervisor_hostname_pattern query '
                                    'parameter is not supported.')
        hosts = _matching(hosts, pattern)
    elif version >= PAGING:
        hosts, limit = _page(hosts, args)
    insts = _instances() if detail or with_servers else []
    out = {'hypervisors': [
        _body(h, insts, detail=detail,
              servers=[i for i in insts if i['host'] == h['name']]
              if with_servers else None) for h in hosts]}
    if limit and len(hosts) == limit:
        links = request.links()
        path = 'os-hypervisors/detail' if detail else 'os-hypervisors'
        out['hypervisors_links'] = [{'rel': 'next', 'href': '%s?limit=%d'
                                     '&marker=%s' % (links.href(path), limit,
                                                     _ident(hosts[-1]))}]
    return out


@bp.get('/os-hypervisors')
def hypervisors():
    return _hypervisors(detail=False)


@bp.get('/os-hypervisors/detail')
def hypervisors_detail():
    return _hypervisors(detail=True)


def _find(hypervisor_id):
    """The host of ``hypervisor_id`` at this version (400 for a malformed
    uuid from 2.53, 404 for no such host)."""
    hosts = _hosts()
    missing = exception.NotFound("Hypervisor with ID '%s' could not be "
                                 "found." % hypervisor_id)
    if request.version() >= UUIDS:
        if not uuidutils.is_uuid_like(hypervisor_id):
            raise exception.Invalid('Invalid uuid %s' % hypervisor_id)
    elif not hypervisor_id.isdigit():
        raise missing
    for host in hosts:
        if str(_ident(host)) == hypervisor_id:
            return host
    raise missing


@bp.get('/os-hypervisors/statistics')
def statistics():
    if request.version() >= NO_STATISTICS:
        raise exception.NotFound('The resource could not be found.')
    hosts = _hosts()
    insts = _instances()
    bodies = [views.hypervisor(h, insts, detail=True) for h in hosts]
    keys = ('vcpus', 'memory_mb', 'local_gb', 'vcpus_used', 'memory_mb_used',
            'local_gb_used', 'free_ram_mb', 'free_disk_gb',
            'current_workload', 'running_vms')
    stats = {k: sum(b[k] for b in bodies) for k in keys}
    stats['disk_available_least'] = stats['free_disk_gb']
    stats['count'] = len(hosts)
    return {'hypervisor_statistics': stats}


@bp.get('/os-hypervisors/<hypervisor_id>')
def hypervisor(hypervisor_id):
    host = _find(hypervisor_id)
    with_servers = (request.version() >= UUIDS
                    and _with_servers(flask.request.args))
    insts = _instances(host['name'])
    return {'hypervisor': _body(host, insts, detail=True,
                                servers=insts if with_servers else None)}


@bp.get('/os-hypervisors/<hypervisor_id>/uptime')
def uptime(hypervisor_id):
    if request.version() >= NO_STATISTICS:
        raise exception.NotFound('The resource could not be found.')
    host = _find(hypervisor_id)
    if not host['up']:
        raise exception.Invalid('Compute service of %s is unavailable at '
                                'this time.' % host['name'])
    body = _body(host, [], detail=False)
    body['uptime'] = _uptime(host)
    return {'hypervisor': body}


def _before_uuids():
    if request.version() >= UUIDS:
        raise exception.NotFound('The resource could not be found.')


@bp.get('/os-hypervisors/<pattern>/search')
def search(pattern):
    _before_uuids()
    hosts = _matching(_hosts(), pattern)
    return {'hypervisors': [_body(h, [], detail=False) for h in hosts]}


@bp.get('/os-hypervisors/<pattern>/servers')
def servers(pattern):
    _before_uuids()
    hosts = _matching(_hosts(), pattern)
    insts = _instances()
    return {'hypervisors': [
        _body(h, [], detail=False,
              servers=[i for i in insts if i['host'] == h['name']])
        for h in hosts]}

