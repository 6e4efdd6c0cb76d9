"""What every route needs of the request it serves: the caller's context,
the microversion, the body, links, and the conductor client and policy of
the application (:class:`Services`, kept in ``app.extensions``)."""

import dataclasses
import time

import flask

from api import auth
from api import bootimage
from api import jsonbody
from api import microversion
from api import schemas
from api import views
from common import exception
from common import flavors as flavors_mod
from common import states
from common.states import vm

EXTENSION = 'tristate'


@dataclasses.dataclass
class Services:
    conf: object
    client: object          # conductor.rpcapi.ConductorAPI, with statedb
    policy: object          # api.policy.Policy


# Who sees where a server runs (api.policy defines them).
EXTENDED_ATTRIBUTES_RULE = 'tristate:servers:show:extended_attributes'
HOST_STATUS_RULE = 'tristate:servers:show:host_status'

# The task a request started, on its answer (and its access log line).
TASK_ID_HEADER = 'Tristate-Task-Id'


def services():
    return flask.current_app.extensions[EXTENSION]


def context():
    return flask.request.environ[auth.ENV_CONTEXT]


def version():
    return flask.g.version


def links():
    prefix = services().conf.api.link_prefix
    return views.Links(prefix or flask.request.host_url)


def authorize(rule, target=None):
    services().policy.authorize(context(), rule, target)


def allows(rule, target=None):
    return services().policy.allows(context(), rule, target)


def json_body(schema):
    """The request's JSON body, validated against ``schema``."""
    data = flask.request.get_data(cache=True)
    body = jsonbody.loads(data) if data.strip() else None
    if body is None and schema.get('type') == 'object':
        raise exception.Invalid('Malformed request body: a JSON object is '
                                'required')
    return schemas.validate(schema, body)


def get_server(uuid, rule='tristate:servers:show'):
    """The instance, or 404 if it does not exist for this caller (other
    projects' and hard-deleted instances do not, as in Nova)."""
    inst = services().client.get_instance(context(), uuid)
    if inst['vm_state'] == vm.HARD_DELETED:
        raise exception.InstanceNotFound(instance=uuid)
    authorize(rule, {'project_id': inst['project_id']})
    return inst


def boot_image(image_ref, flavor_name=None):
    """The image the caller may boot (with ``flavor_name``), checked
    before anything is claimed: 400 otherwise (:mod:`api.bootimage`)."""
    found = services()
    return bootimage.check(found.conf, found.client.statedb, context(),
                           image_ref, flavor_name)


def hosts_up():
    """{host: up} from the conductor's host list (heartbeats)."""
    ctx = context().elevated()
    return {h['name']: h['up'] for h in services().client.list_hosts(ctx)}


def flavor_ids():
    """{flavor name: flavor id} of the flavors there are, read once per
    request: a server links its flavor by id before 2.47, and its row
    keeps the name."""
    found = flask.g.get('flavor_ids')
    if found is None:
        svc = services()
        statedb = getattr(svc.client, 'statedb', None)
        found = {} if statedb is None else flavors_mod.seeded(
            svc.conf, statedb).flavor_ids()
        flask.g.flavor_ids = found
    return found


# Nova's ``server_groups`` of a server (not in lists): the group it is in.
SERVER_GROUPS = microversion.APIVersion(2, 71)


def server_body(inst, up=None, fault=None, kind=views.SHOW):
    """The server as Nova's view ``kind`` (:data:`views.SHOW`, ``LIST``,
    ``UPDATE``, ``REBUILD``) shows it to this caller at this request's
    microversion."""
    return ServerViews(up).body(inst, fault=fault, kind=kind)


class ServerViews:
    """Renders servers for this request: what every body needs of the
    request (microversion, links, flavor ids, host zones, what the caller
    may see) is read once, not once per server (a list renders
    thousands). ``up``: {host: up}, read here when not given."""

    def __init__(self, up=None):
        self.up = hosts_up() if up is None else up
        self.version = version()
        self.links = links()
        self.flavor_ids = (flavor_ids()
                           if self.version < microversion.EMBEDDED_FLAVOR
                           else None)
        self.groups = self.version >= SERVER_GROUPS
        self._zones = None
        self._sees = {}

    def body(self, inst, *, fault=None, kind=views.SHOW):
        """One server's body. ``inst`` is not changed."""
        uuid = inst['uuid']
        if 'addresses' not in inst:
            found, groups = network_views([uuid])
            inst = dict(inst, addresses=found.get(uuid, {}),
                        security_groups=inst.get('security_groups',
                                                 groups.get(uuid, [])))
        elif 'security_groups' not in inst and kind != views.LIST:
            inst = dict(inst, security_groups=security_groups([uuid]).get(
                uuid, []))
        if self.flavor_ids is not None:
            flavor_id = self.flavor_ids.get(inst['flavor_name'])
            if flavor_id is not None and flavor_id != inst['flavor_name']:
                inst = dict(inst, flavor_id=flavor_id)
        if kind != views.LIST and self.groups:
            group = services().client.statedb.server_group_of(inst['uuid'])
            inst = dict(inst, server_groups=[group] if group else [])
        project_id = inst['project_id']
        sees = self._sees.get(project_id)
        if sees is None:
            sees = self._sees[project_id] = _sees_where(project_id)
        host = inst.get('host')
        return views.server(
            inst, version=self.version, links=self.links,
            host_up=self.up.get(host, False), fault=fault,
            extended=sees[0], host_status=sees[1], kind=kind,
            zone=self.zone(host, inst))

    def zone(self, host, inst):
        """:func:`zone_of` with this request's zones at hand."""
        if not host:
            return inst.get('availability_zone') or ''
        if self._zones is None:
            self._zones = _host_zones()
        zones, default = self._zones
        return zones.get(host, default)


def zone_of(inst):
    """The server's availability zone as Nova shows it: its host's (the
    zones read once per request), or while it has no host the zone it
    asked for, or ''."""
    host = inst.get('host')
    if not host:
        return inst.get('availability_zone') or ''
    zones, default = _host_zones()
    return zones.get(host, default)


def _host_zones():
    """({host: zone}, the default zone) of this request, read once."""
    found = flask.g.get('host_zones')
    if found is None:
        svc = services()
        statedb = getattr(svc.client, 'statedb', None)
        found = flask.g.host_zones = (
            {} if statedb is None else statedb.host_zones(),
            svc.conf.default_availability_zone)
    return found


def network_views(uuids):
    """(``{uuid: addresses}``, ``{uuid: [group name]}``) of the servers
    ``uuids``, in one query: a page of servers."""
    statedb = services().client.statedb
    return (statedb.network_views_of(uuids) if statedb is not None
            else ({}, {}))


def security_groups(uuids):
    """``{uuid: [group name]}`` of the servers ``uuids`` that have ports
    (common/secgroups.py), in one query."""
    statedb = services().client.statedb
    return statedb.security_groups_of(uuids) if statedb is not None else {}


def addresses(uuids):
    """``{uuid: addresses as Nova shows them}`` of the servers ``uuids``,
    in one query (common/db/networks.py); a server with none is absent."""
    statedb = services().client.statedb
    return statedb.addresses_of(uuids) if statedb is not None else {}


def _sees_where(project_id):
    """(extended attributes, host_status) this caller may see on a server
    of ``project_id``; asked once per project in a request (a list of a
    thousand servers asks once)."""
    seen = flask.g.setdefault('sees_where', {})
    if project_id not in seen:
        target = {'project_id': project_id}
        seen[project_id] = (allows(EXTENDED_ATTRIBUTES_RULE, target),
                            allows(HOST_STATUS_RULE, target))
    return seen[project_id]


def no_content(status=204):
    return flask.Response(status=status)


# Seconds between two reads of a task the API waits for.
TASK_POLL = 0.05


def failed_task_reason(client, task_id):
    """Wait, at most ``[api] rpc_timeout`` seconds, for the task
    ``task_id`` to end (for an action Nova answers only once it is
    done): its failure's reason, or None when it succeeded, still runs
    at the deadline, or the API has no database to read it from."""
    statedb = getattr(client, 'statedb', None)
    if statedb is None:
        return None
    deadline = time.monotonic() + services().conf.api.rpc_timeout
    while time.monotonic() < deadline:
        entry = statedb.get_action(task_id)
        if entry is not None and entry['result'] != states.RESULT_RUNNING:
            if entry['result'] == states.RESULT_SUCCESS:
                return None
            return entry['message'] or entry['result']
        time.sleep(TASK_POLL)
    return None
