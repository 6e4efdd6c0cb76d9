"""``/v2.1/os-hosts``: Nova's hosts API (deprecated; removed at 2.43), admin
only. (The leases' reservable pool is Blazar's ``/v1/os-hosts`` under
``/reservation``, :mod:`api.reservation`.)

    GET /v2.1/os-hosts[?zone=Z]   {"hosts": [{"host_name", "service", "zone"}]}
    GET /v2.1/os-hosts/{host}     {"host": [{"resource": {...}}, ...]}

As Nova answers them below 2.43: the list names each enabled compute
host (service ``compute``, in its availability zone); a host shows its total, used
now, used by its instances' flavors (``(used_max)``) and per project.
Tristate runs no other Nova service a host list would name. From 2.43 every
``os-hosts`` path is 404, as in Nova. Nova's ``PUT`` (enable, maintenance
mode) and power actions (``startup``, ``shutdown``, ``reboot``) are checked
as Nova checks them (its body schema, the policy, 404 for an unknown host),
then refused with a 400 that says they are not supported (hosts are
disabled with ``tristate-manage``; maintenance and host power are not
built).
"""

import flask

from api import microversion
from api import request
from common import exception
from common.states import vm

bp = flask.Blueprint('os_hosts', __name__, url_prefix='/v2.1/os-hosts')
RULE = 'tristate:hypervisors:index'
REMOVED = microversion.APIVersion(2, 43)
_MODE = {'type': 'string', 'enum': ['enable', 'disable', 'Enable', 'Disable',
                                    'ENABLE', 'DISABLE']}
# Nova's body of PUT /os-hosts/{host}: one of the two, nothing else.
UPDATE = {'type': 'object',
          'properties': {'status': _MODE, 'maintenance_mode': _MODE},
          'anyOf': [{'required': ['status']},
                    {'required': ['maintenance_mode']}],
          'additionalProperties': False}


@bp.before_request
def _before_removal():
    if request.version() >= REMOVED:
        raise exception.NotFound('The resource could not be found.')


def _hosts():
    return request.services().client.list_hosts(request.context())


@bp.get('', strict_slashes=False)
def index():
    request.authorize(RULE)
    zone = flask.request.args.get('zone')
    zones = request.services().client.statedb.host_zones()
    default = request.services().conf.default_availability_zone
    found = [{'host_name': h['name'], 'service': 'compute',
              'zone': zones.get(h['name'], default)}
             for h in _hosts() if h.get('enabled', True)]
    return {'hosts': [h for h in found if not zone or h['zone'] == zone]}


def _resource(host, project, cpu, memory_mb, disk_gb):
    return {'resource': {'host': host, 'project': project, 'cpu': cpu,
                         'memory_mb': memory_mb, 'disk_gb': disk_gb}}


def _found(host):
    found = next((h for h in _hosts() if h['name'] == host), None)
    if found is None:
        raise exception.HostNotFound(host=host)
    return found


@bp.get('/<host>')
def show(host):
    request.authorize(RULE)
    found = _found(host)
    client, ctx = request.services().client, request.context()
    insts = [i for i in client.list_instances(ctx, all_projects=True)
             if i.get('host') == host and i['vm_state'] != vm.HARD_DELETED]
    body = [_resource(host, '(total)', found['vcpus'], found['memory_mb'],
                      found['disk_gb']),
            _resource(host, '(used_now)', found['used_vcpus'],
                      found['used_memory_mb'], found['used_disk_gb']),
            _resource(host, '(used_max)', *_sums(insts))]
    for project in sorted({i['project_id'] for i in insts}):
        mine = [i for i in insts if i['project_id'] == project]
        body.append(_resource(host, project, *_sums(mine)))
    return {'host': body}


def _sums(insts):
    return (sum(i['vcpus'] for i in insts),
            sum(i['memory_mb'] for i in insts),
            sum(i['disk_gb'] for i in insts))


@bp.put('/<host>')
def update(host):
    """Nova's checks in Nova's order (the body, the policy, the host),
    then the refusal: a bad body is 400, an unknown host 404."""
    body = request.json_body(UPDATE)
    request.authorize(RULE)
    _found(host)
    raise _not_supported('changing a host\'s %s' % ' and '.join(
        sorted(body)))


@bp.get('/<host>/<any(startup, shutdown, reboot):action>')
def power_action(host, action):
    request.authorize(RULE)
    _found(host)
    raise _not_supported('the host power action %s' % action)


def _not_supported(what):
    return exception.Invalid('os-hosts: %s is not supported by Tristate '
                             '(disable a host with tristate-manage).' % what)
