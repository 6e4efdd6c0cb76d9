"""The JSON bodies the API answers with, Nova's shapes plus ``tristate:*``.

Every function takes plain dicts (what the conductor's RPC API returns) and
the request's microversion, and returns plain dicts; nothing here calls
anyone.
"""

import datetime
import functools
import hashlib

from api import microversion
from api import status
from common import hostnames
from common import reconcile
from common import states
from common.db import quota_classes

POLICY_KEYS = {'user_shutdown': 'tristate:user_shutdown',
               'crash': 'tristate:crash'}
POLICY_COLUMNS = {'user_shutdown': 'user_shutdown_policy',
                  'crash': 'crash_policy'}
POLICY_CHOICES = {'user_shutdown': states.USER_SHUTDOWN_POLICIES,
                  'crash': states.CRASH_POLICIES}
LOCKED_REASON = microversion.APIVersion(2, 73)


def isotime(value):
    """'YYYY-MM-DDTHH:MM:SSZ' from a naive-UTC datetime or its ISO string."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    if value.tzinfo is None and value.year >= 1000:
        # the same text as strftime's below, several times faster (a list
        # of a thousand servers formats a few thousand of them)
        return value.isoformat('T', 'seconds') + 'Z'
    return value.strftime('%Y-%m-%dT%H:%M:%SZ')


class Links:
    """Builds self and bookmark links under one base URL: every link is
    one of two prefixes and a tail (a list builds three per server)."""

    def __init__(self, base_url):
        self.base = base_url.rstrip('/')
        self.self_prefix = self.base + '/v2.1/'
        self.bookmark_prefix = self.base + '/'

    def href(self, *parts):
        if not parts:
            return self.base + '/v2.1'
        return self.self_prefix + '/'.join([str(p) for p in parts])

    def bookmark(self, *parts):
        if not parts:
            return self.base
        return self.bookmark_prefix + '/'.join([str(p) for p in parts])

    def links(self, collection, ident):
        tail = '%s/%s' % (collection, ident)
        return [{'rel': 'self', 'href': self.self_prefix + tail},
                {'rel': 'bookmark', 'href': self.bookmark_prefix + tail}]


# --- versions ----------------------------------------------------------------

def version_doc(links):
    return {
        'id': 'v2.1',
        'status': 'CURRENT',
        'version': str(microversion.MAX),
        'min_version': str(microversion.MIN),
        'updated': '2013-07-23T11:33:21Z',
        'links': [{'rel': 'self', 'href': links.href('')},
                  {'rel': 'describedby', 'type': 'text/html',
                   'href': 'https://docs.openstack.org/'}],
        'media-types': [{
            'base': 'application/json',
            'type': 'application/vnd.openstack.compute+json;version=2.1'}],
    }


# --- servers -------------------------------------------------------------------

def metadata(inst):
    """The reconcile policies, as metadata keys (the metadata routes)."""
    return {key: inst[POLICY_COLUMNS[name]]
            for name, key in POLICY_KEYS.items()}


def server_metadata(inst, version):
    """A server's ``metadata``: the user's (``inst['metadata']``), and from
    Tristate's own microversion the reconcile policies too."""
    return _shown_metadata(inst, version >= microversion.TRISTATE)


def _shown_metadata(inst, policies):
    shown = dict(inst.get('metadata') or ())
    if policies:
        for name, key in POLICY_KEYS.items():
            shown[key] = inst[POLICY_COLUMNS[name]]
    return shown


# main's name for it (the metadata routes)
all_metadata = server_metadata


def _flavor(inst, embedded, links):
    if embedded:
        return {'vcpus': inst['vcpus'], 'ram': inst['memory_mb'],
                'disk': inst['disk_gb'], 'ephemeral': 0, 'swap': 0,
                'original_name': inst['flavor_name'], 'extra_specs': {}}
    # the flavor's id, when the API found it (request.server_body)
    flavor_id = inst.get('flavor_id') or inst['flavor_name']
    return {'id': flavor_id,
            'links': [{'rel': 'bookmark',
                       'href': '%sflavors/%s' % (links.bookmark_prefix, flavor_id)}]}


def _host_id(inst):
    # Nova's hostId: the same host looks the same within one project only.
    host = inst.get('host')
    if not host:
        return ''
    return _host_digest(inst['project_id'], host)


@functools.lru_cache(maxsize=4096)
def _host_digest(project_id, host):
    # a list's servers share a few hosts: hashed once each
    return hashlib.sha224(('%s%s' % (project_id, host)).encode()).hexdigest()


def _progress(inst):
    if inst['task_id'] is None:
        return None
    return {'step': inst.get('progress_step'),
            'percent': inst.get('progress_percent') or 0}


def created_server(inst, links):
    """The answer to ``POST /servers``: what Nova's create schema allows
    (the route adds ``security_groups`` and ``adminPass``: api/guest.py).
    A client reads the rest with ``GET /servers/{id}``."""
    return {'id': inst['uuid'], 'links': links.links('servers', inst['uuid']),
            'OS-DCF:diskConfig': disk_config(inst)}


def disk_config(inst):
    """Nova's ``OS-DCF:diskConfig``: AUTO or MANUAL (a server made
    before Tristate kept it: MANUAL, what it did)."""
    return 'AUTO' if inst.get('auto_disk_config') else 'MANUAL'


def server_summary(inst, links):
    return {'id': inst['uuid'], 'name': inst['name'],
            'links': links.links('servers', inst['uuid'])}


# Nova's os-extended-server-attributes: where the server runs (admin-only
# by default, as in Nova); from 2.3 more of them, from 2.90 the hostname
# for everyone.
EXTENDED_ATTRIBUTES = ('OS-EXT-SRV-ATTR:host',
                       'OS-EXT-SRV-ATTR:hypervisor_hostname',
                       'OS-EXT-SRV-ATTR:instance_name')
EXTENDED_ATTRIBUTES_2_3 = ('OS-EXT-SRV-ATTR:reservation_id',
                           'OS-EXT-SRV-ATTR:launch_index',
                           'OS-EXT-SRV-ATTR:hostname',
                           'OS-EXT-SRV-ATTR:kernel_id',
                           'OS-EXT-SRV-ATTR:ramdisk_id',
                           'OS-EXT-SRV-ATTR:root_device_name',
                           'OS-EXT-SRV-ATTR:user_data')
# Nova shows ``progress`` only in these statuses.
_PROGRESS_STATUSES = frozenset(('ACTIVE', 'BUILD', 'REBUILD', 'RESIZE',
                                'VERIFY_RESIZE', 'MIGRATING'))

# The four answers that carry a server, as Nova builds them: GET
# /servers/{id}, an item of /servers/detail, PUT /servers/{id} and the
# rebuild's. Before 2.75 the last two are Nova's basic view (no extension
# attributes); from 2.75 they are the show view.
SHOW, LIST, UPDATE, REBUILD = 'show', 'list', 'update', 'rebuild'

V = microversion.APIVersion
# (microversion, key, the views it is in): Nova's keys added after 2.1
# (Tempest's response schemas v2_9 ... v2_100). Their defaults: _DEFAULTS.
_GATED = (
    (V(2, 9), 'locked', (SHOW, LIST, UPDATE, REBUILD)),
    (V(2, 19), 'description', (SHOW, LIST, UPDATE, REBUILD)),
    (V(2, 26), 'tags', (SHOW, LIST, UPDATE, REBUILD)),
    (V(2, 54), 'key_name', (REBUILD,)),
    (V(2, 57), 'user_data', (REBUILD,)),
    (V(2, 63), 'trusted_image_certificates', (SHOW, LIST, UPDATE, REBUILD)),
    (V(2, 71), 'server_groups', (SHOW, UPDATE, REBUILD)),
    (V(2, 73), 'locked_reason', (SHOW, LIST, UPDATE, REBUILD)),
    (V(2, 96), 'pinned_availability_zone', (SHOW, LIST, UPDATE, REBUILD)),
    (V(2, 100), 'scheduler_hints', (SHOW, LIST, UPDATE, REBUILD)),
)
_DEFAULTS = {'locked': False, 'description': None, 'tags': [],
             'key_name': None, 'user_data': None,
             'trusted_image_certificates': None, 'server_groups': [],
             'locked_reason': None, 'pinned_availability_zone': None,
             'scheduler_hints': {}}
SHOWS_ALL = V(2, 75)
HOSTNAME_FOR_ALL = V(2, 90)
MORE_EXTENDED = V(2, 3)


class _Shape:
    """What one (microversion, view) shows: worked out once per pair, so
    a list of a thousand servers compares versions once."""

    def __init__(self, version, kind):
        full = kind in (SHOW, LIST) or version >= SHOWS_ALL
        self.version = version
        self.full = full
        self.extended = (EXTENDED_ATTRIBUTES + EXTENDED_ATTRIBUTES_2_3
                         if version >= MORE_EXTENDED else EXTENDED_ATTRIBUTES)
        if kind == REBUILD and version >= SHOWS_ALL:
            # user_data is its own key in a rebuild's answer
            self.extended = tuple(k for k in self.extended
                                  if k != 'OS-EXT-SRV-ATTR:user_data')
        self.hostname_for_all = version >= HOSTNAME_FOR_ALL
        self.host_status = full and version >= microversion.HOST_STATUS
        self.embedded_flavor = version >= microversion.EMBEDDED_FLAVOR
        keys = [key for since, key, kinds in _GATED
                if version >= since and kind in kinds]
        self.locked = 'locked' in keys
        # (key, the column it is read from, a maker of its default or
        # None, the default)
        self.gated = tuple((key, _SOURCES.get(key, key), _MAKERS.get(key),
                            _DEFAULTS[key])
                           for key in keys if key != 'locked')
        self.tristate = version >= microversion.TRISTATE


_MAKERS = {'tags': list, 'server_groups': list, 'scheduler_hints': dict}
# Gated keys read from a column of another name: the zone the boot request
# asked for is what Nova pins a server to (its request spec's zone).
_SOURCES = {'pinned_availability_zone': 'availability_zone'}
_SHAPES = {}


def _shape(version, kind):
    key = (version.major, version.minor, kind)
    shape = _SHAPES.get(key)
    if shape is None:
        # at most one per (microversion, view): a few hundred, ever
        shape = _SHAPES[key] = _Shape(version, kind)
    return shape


def server(inst, *, version, links, host_up=True, fault=None,
           extended=True, host_status=True, kind=SHOW, zone=''):
    """The body of one server, as Nova's view ``kind`` at ``version``
    (GET /servers/{id}, an item of /servers/detail, PUT, rebuild).

    ``extended`` and ``host_status`` say whether the caller may see the
    ``OS-EXT-SRV-ATTR:*`` keys and ``host_status`` (Nova's policies
    ``os-extended-server-attributes`` and ``servers:show:host_status``);
    keys the caller may not see are left out, as Nova does. Tristate's own
    keys (``tristate:*``) appear only from its own microversion. ``zone``:
    the server's availability zone as Nova shows it (its host's, or the
    one it asked for while it has no host, or '').

    A list renders a thousand of these: the body is built in one literal,
    in the order Nova's are (clients and the byte-for-byte tests read it),
    with what depends on the microversion alone worked out once
    (:class:`_Shape`).
    """
    shape = _shape(version, kind)
    vm_state, task_state = inst['vm_state'], inst['task_state']
    uuid = inst['uuid']
    tail = 'servers/%s' % uuid
    image_ref = inst['image_ref']
    shown_status = status.shown_status(vm_state, task_state, version)
    body = {
        'id': uuid, 'name': inst['name'],
        'links': [{'rel': 'self', 'href': links.self_prefix + tail},
                  {'rel': 'bookmark', 'href': links.bookmark_prefix + tail}],
        'status': shown_status,
        'tenant_id': inst['project_id'],
        'user_id': inst['user_id'],
        'created': isotime(inst['created_at']),
        'updated': isotime(inst['updated_at']),
        'hostId': _host_id(inst),
        'image': {'id': image_ref,
                  'links': [{'rel': 'bookmark',
                             'href': '%simages/%s' % (links.bookmark_prefix,
                                                      image_ref)}]},
        'flavor': _flavor(inst, shape.embedded_flavor, links),
        'addresses': _addresses(inst.get('addresses'), shape.full),
        'accessIPv4': inst.get('access_ip_v4') or '',
        'accessIPv6': inst.get('access_ip_v6') or '',
        'metadata': _shown_metadata(inst, shape.tristate),
        'OS-DCF:diskConfig': disk_config(inst),
    }
    if shown_status in _PROGRESS_STATUSES:
        body['progress'] = inst.get('progress_percent') or 0
    if fault is not None:
        body['fault'] = fault
    if shape.full:
        _add_extensions(body, inst, shape, extended, zone)
        if inst.get('security_groups'):
            # Nova's: the groups of the server's ports; none: no key
            body['security_groups'] = [{'name': name} for name in
                                       inst['security_groups']]
        if shape.host_status and host_status:
            body['host_status'] = _host_status(inst, host_up)
    if shape.locked:
        body['locked'] = bool(inst.get('locked'))
    for key, source, make, default in shape.gated:
        value = inst.get(source)
        if value is None:
            value = make() if make else default
        body[key] = value
    if shape.tristate:
        _add_tristate(body, inst, host_up)
    return body


def _addresses(addresses, extended):
    """A server's ``addresses``; the ``OS-EXT-IPS*`` keys only where
    Nova extends them (show and list; update and rebuild from 2.75)."""
    if extended or not addresses:
        return addresses or {}
    return {net: [{'version': a['version'], 'addr': a['addr']}
                  for a in entries]
            for net, entries in addresses.items()}


def _add_extensions(body, inst, shape, extended, zone):
    """Nova's show/detail extensions: zone, states, usage, where it runs."""
    body['key_name'] = inst.get('key_name')
    # Nova's string: "True" with a config drive, else ""
    body['config_drive'] = 'True' if inst.get('config_drive') else ''
    body['OS-EXT-AZ:availability_zone'] = zone
    body['OS-EXT-STS:vm_state'] = status.shown_vm_state(inst['vm_state'],
                                                        shape.version)
    body['OS-EXT-STS:task_state'] = inst['task_state']
    body['OS-EXT-STS:power_state'] = inst['power_state']
    body['OS-SRV-USG:launched_at'] = isotime(inst.get('launched_at'))
    body['OS-SRV-USG:terminated_at'] = isotime(inst.get('hard_deleted_at'))
    body['os-extended-volumes:volumes_attached'] = []
    if extended:
        body.update({key: _extended_value(inst, key)
                     for key in shape.extended})
    elif shape.hostname_for_all:
        body['OS-EXT-SRV-ATTR:hostname'] = _hostname(inst)


def _extended_value(inst, key):
    if key in ('OS-EXT-SRV-ATTR:host', 'OS-EXT-SRV-ATTR:hypervisor_hostname'):
        return inst['host']
    if key == 'OS-EXT-SRV-ATTR:instance_name':
        return 'instance-%s' % inst['uuid']
    if key == 'OS-EXT-SRV-ATTR:hostname':
        return _hostname(inst)
    if key == 'OS-EXT-SRV-ATTR:launch_index':
        return inst.get('launch_index') or 0
    if key == 'OS-EXT-SRV-ATTR:reservation_id':
        # the boot request's (r-...), not a lease's reservation
        return inst.get('boot_reservation_id')
    # kernel_id, ramdisk_id, root_device_name: Tristate keeps none of them;
    # user_data is the one sent at create (api/guest.py)
    return inst.get(key.partition(':')[2])


def _hostname(inst):
    """Nova's hostname of a server (common/hostnames.py)."""
    return hostnames.of_instance(inst)


def _add_tristate(body, inst, host_up):
    body.update({
        'tristate:task_id': inst['task_id'],
        'tristate:progress': _progress(inst),
        'tristate:power_state_name': states.power_state_name(
            inst['power_state']),
        'tristate:power_reason': inst.get('power_reason'),
        'tristate:oper_state': reconcile.oper_state(inst, host_up=host_up),
        'tristate:ec2_state': status.ec2_state(inst['vm_state'],
                                               inst['task_state']),
    })


def _host_status(inst, host_up):
    if not inst.get('host'):
        return ''
    return 'UP' if host_up else 'DOWN'


def fault(entry):
    """Nova's ``fault`` of an errored server, from its last action log row."""
    return {'code': entry.get('fault_code') or 500,
            'message': entry.get('message') or '',
            'created': isotime(entry.get('finished_at')
                               or entry.get('started_at'))}


# --- flavors ---------------------------------------------------------------------

FLAVOR_DESCRIPTION = V(2, 55)
FLAVOR_EXTRA_SPECS = V(2, 61)
SWAP_AS_INTEGER = V(2, 75)


def _get(flv, name, default=None):
    """A flavor's field: flavors are dicts (the database's) or
    :class:`common.flavors.Flavor` values (the configuration's)."""
    if isinstance(flv, dict):
        return flv.get(name, default)
    return getattr(flv, name, default)


def flavor(flv, links, *, detail=True, version=microversion.MIN,
           extra_specs=True):
    """A flavor as Nova shows it at ``version``: ``description`` from 2.55
    (list and detail), ``extra_specs`` from 2.61 (detail, to those allowed
    to read them), ``swap`` 0 instead of "" from 2.75."""
    ident = _get(flv, 'flavorid') or _get(flv, 'id') or _get(flv, 'name')
    body = {'id': ident, 'name': _get(flv, 'name'),
            'links': links.links('flavors', ident)}
    if version >= FLAVOR_DESCRIPTION:
        body['description'] = _get(flv, 'description')
    if not detail:
        return body
    swap = _get(flv, 'swap', 0) or 0
    body.update({
        'vcpus': _get(flv, 'vcpus'), 'ram': _get(flv, 'memory_mb'),
        'disk': _get(flv, 'disk_gb'),
        'swap': swap if swap or version >= SWAP_AS_INTEGER else '',
        'OS-FLV-EXT-DATA:ephemeral': _get(flv, 'ephemeral_gb', 0) or 0,
        'rxtx_factor': _get(flv, 'rxtx_factor', 1.0),
        'OS-FLV-DISABLED:disabled': bool(_get(flv, 'disabled', False)),
        'os-flavor-access:is_public': bool(_get(flv, 'is_public', True))})
    if version >= FLAVOR_EXTRA_SPECS and extra_specs:
        body['extra_specs'] = dict(_get(flv, 'extra_specs') or {})
    return body


# --- hosts (os-hypervisors) -------------------------------------------------------

def hypervisor(host, instances, *, detail=True, version=microversion.MIN):
    """One host, with what its agent reports and what is allocated on it,
    in Nova's 2.1 shape; ``tristate:*`` keys from 2.101 only. The route
    (:mod:`api.routes.catalog`) makes Nova's changes of later versions:
    ids (2.53), ``cpu_info`` (2.28), the capacity gone at 2.88."""
    mine = [i for i in instances if i.get('host') == host['name']]
    body = {'id': host['name'], 'hypervisor_hostname': host['name'],
            'state': 'up' if host['up'] else 'down',
            'status': 'enabled' if host.get('enabled', True) else 'disabled'}
    if not detail:
        return body
    free_disk = host['disk_gb'] - host['used_disk_gb']
    # As Nova: the totals with what the host reserves for itself, counted
    # as used (memory, disk); reserved CPUs are not counted as used.
    kept_mb = host.get('reserved_memory_mb') or 0
    kept_gb = host.get('reserved_disk_gb') or 0
    body.update({
        'vcpus': host['vcpus'] + (host.get('reserved_vcpus') or 0),
        'vcpus_used': host['used_vcpus'],
        'memory_mb': host['memory_mb'] + kept_mb,
        'memory_mb_used': host['used_memory_mb'] + kept_mb,
        'local_gb': host['disk_gb'] + kept_gb,
        'local_gb_used': host['used_disk_gb'] + kept_gb,
        'free_ram_mb': host['memory_mb'] - host['used_memory_mb'],
        'free_disk_gb': free_disk, 'disk_available_least': free_disk,
        'running_vms': len(mine), 'current_workload': 0,
        'hypervisor_type': 'tristate', 'hypervisor_version': 1,
        'host_ip': None, 'cpu_info': '{}',
        'service': {'host': host['name'], 'id': host['name'],
                    'disabled_reason': host.get('disabled_reason')},
    })
    if version >= microversion.TRISTATE:
        counts = dict.fromkeys(reconcile.OPER_STATES, 0)
        for inst in mine:
            counts[reconcile.oper_state(inst, host_up=host['up'])] += 1
        body['tristate:last_heartbeat'] = isotime(host.get('last_heartbeat'))
        body['tristate:oper_states'] = counts
    return body


# --- the action log (os-instance-actions) ----------------------------------------

# The action log's names as Nova records them (``nova.compute.
# instance_actions``): clients and scripts match on these. Tristate's own
# name is ``tristate:action`` from its microversion; one with no Nova
# counterpart (``reconcile``: an observed change) keeps its name.
NOVA_ACTION_NAMES = {
    'build': 'create', 'reboot_hard': 'reboot',
    'confirm_resize': 'confirmResize', 'revert_resize': 'revertResize',
    'live_migrate': 'live-migration', 'snapshot': 'createImage',
    'backup': 'createBackup', 'set_password': 'changePassword',
    'soft_delete': 'delete', 'reset_state': 'resetState',
    'power_off': 'stop', 'power_on': 'start',
    'evacuate_stopped': 'evacuate', 'shelve_offload': 'shelveOffload',
}


def instance_action(entry, version):
    """One action of the log, as Nova's (its action names; ``updated_at``
    from 2.58), with Tristate's task fields from its own microversion."""
    action = {
        'action': NOVA_ACTION_NAMES.get(entry['action'], entry['action']),
        'instance_uuid': entry['instance_uuid'],
        'request_id': entry.get('request_id') or entry['task_id'],
        'user_id': entry.get('user_id'),
        'project_id': entry.get('project_id'),
        'start_time': isotime(entry['started_at']),
        'message': entry.get('message'),
    }
    if version >= ACTION_UPDATED_AT:
        action['updated_at'] = isotime(entry.get('finished_at')
                                       or entry['started_at'])
    if version >= microversion.TRISTATE:
        action.update({
            'tristate:action': entry['action'],
            'tristate:task_id': entry['task_id'],
            'tristate:result': entry['result'],
            'tristate:finish_time': isotime(entry.get('finished_at')),
            'tristate:vm_state_before': _shown(entry.get('vm_state_before'),
                                               version),
            'tristate:vm_state_after': _shown(entry.get('vm_state_after'),
                                              version),
        })
    return action


ACTION_UPDATED_AT = V(2, 58)


# The action log's results as Nova's event results; a running task has none.
_EVENT_RESULTS = {states.RESULT_RUNNING: None,
                  states.RESULT_SUCCESS: 'Success'}


def instance_action_event(entry, version, *, show_traceback, show_host):
    """One event of an action: one task of the action log, as stored.

    Tristate keeps no traceback, only the failure's message: it is the
    ``traceback`` (for those allowed to see events in full) and, from 2.84,
    the ``details``. The action log does not record on which host a task
    ran: ``hostId`` and ``host`` are empty, as Nova's for an event with no
    host.
    """
    result = _EVENT_RESULTS.get(entry['result'], 'Error')
    failure = entry.get('message') if result == 'Error' else None
    event = {'event': 'tristate_%s' % entry['action'],
             'start_time': isotime(entry['started_at']),
             'finish_time': isotime(entry.get('finished_at')),
             'result': result}
    if version >= microversion.TRISTATE:
        event['tristate:task_id'] = entry['task_id']
        event['tristate:result'] = entry['result']
    if show_traceback:
        event['traceback'] = failure
    if version >= microversion.EVENT_HOST:
        event['hostId'] = ''
        if show_host:
            event['host'] = ''
    if version >= microversion.EVENT_DETAILS:
        event['details'] = failure
    return event


def _shown(vm_state, version):
    return vm_state and status.shown_vm_state(vm_state, version)


# --- quota sets (os-quota-sets) ---------------------------------------------------

# Nova's quota keys, with what they stopped being at. Tristate enforces
# ``metadata_items`` and ``key_pairs``; the others count what Tristate does
# not have, and are stored and shown as set (common.db.quota_classes.
# NOVA_ONLY).
_NOVA_ONLY_QUOTAS = (
    ('metadata_items', None), ('key_pairs', None), ('server_groups', None),
    ('server_group_members', None),
    ('floating_ips', V(2, 36)), ('fixed_ips', V(2, 36)),
    ('security_groups', V(2, 36)), ('security_group_rules', V(2, 36)),
    ('injected_files', V(2, 57)), ('injected_file_content_bytes', V(2, 57)),
    ('injected_file_path_bytes', V(2, 57)))
# Nova's own limits Tristate keeps (the others of quotas.LIMITS, ``disk``
# and the leases', are Tristate's, shown from 2.101).
NOVA_QUOTAS = ('instances', 'cores', 'ram')


def quota_keys(version):
    """The Nova keys of a quota set at ``version`` that Tristate does not
    limit."""
    return tuple(key for key, until in _NOVA_ONLY_QUOTAS
                 if until is None or version < until)


def quota_set(values, version, *, project_id=None, in_use=None):
    """A quota set at ``version``: ``values`` is {resource: limit} of
    Tristate's resources and Nova's others; with ``in_use`` ({resource:
    count}) each is the detail's {limit, in_use, reserved}."""
    def shown(resource, limit):
        if in_use is None:
            return limit
        return {'limit': limit, 'in_use': in_use.get(resource, 0),
                'reserved': 0}
    body = {r: shown(r, values[r]) for r in NOVA_QUOTAS if r in values}
    nova = dict(quota_classes.NOVA_ONLY, **values)
    body.update((k, shown(k, nova[k])) for k in quota_keys(version))
    if version >= microversion.TRISTATE:
        body.update((r, shown(r, v)) for r, v in values.items()
                    if r not in NOVA_QUOTAS
                    and r not in quota_classes.NOVA_ONLY)
    if project_id is not None:
        body['id'] = project_id
    return body
