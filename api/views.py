"""The JSON bodies the API answers with, Nova's shapes plus ``tristate:*``.

Every function takes plain dicts (what the conductor's RPC API returns) and
the request's microversion, and returns plain dicts; nothing here calls
anyone.
"""

import datetime
import hashlib

from api import microversion
from api import status
from common import reconcile
from common import states

POLICY_KEYS = {'user_shutdown': 'tristate:user_shutdown',
               'crash': 'tristate:crash'}
POLICY_COLUMNS = {'user_shutdown': 'user_shutdown_policy',
                  'crash': 'crash_policy'}
POLICY_CHOICES = {'user_shutdown': states.USER_SHUTDOWN_POLICIES,
                  'crash': states.CRASH_POLICIES}
AVAILABILITY_ZONE = 'nova'
LOCKED_REASON = microversion.APIVersion(2, 73)


def isotime(value):
    """'YYYY-MM-DDTHH:MM:SSZ' from a naive-UTC datetime or its ISO string."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    return value.strftime('%Y-%m-%dT%H:%M:%SZ')


class Links:
    """Builds self and bookmark links under one base URL."""

    def __init__(self, base_url):
        self.base = base_url.rstrip('/')

    def href(self, *parts):
        return '/'.join([self.base, 'v2.1'] + [str(p) for p in parts])

    def bookmark(self, *parts):
        return '/'.join([self.base] + [str(p) for p in parts])

    def links(self, collection, ident):
        return [{'rel': 'self', 'href': self.href(collection, ident)},
                {'rel': 'bookmark', 'href': self.bookmark(collection, ident)}]


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
    """The reconcile policies, as their ``tristate:`` metadata keys."""
    return {key: inst[POLICY_COLUMNS[name]]
            for name, key in POLICY_KEYS.items()}


def all_metadata(inst, version):
    """User metadata (``inst['metadata']``), and from 2.101 the policy
    keys (Tristate's, shown only from its own microversion)."""
    meta = dict(inst.get('metadata') or {})
    if version >= microversion.PENDING:
        meta.update(metadata(inst))
    return meta


def _flavor(inst, version, links):
    if version >= microversion.EMBEDDED_FLAVOR:
        return {'vcpus': inst['vcpus'], 'ram': inst['memory_mb'],
                'disk': inst['disk_gb'], 'ephemeral': 0, 'swap': 0,
                'original_name': inst['flavor_name'], 'extra_specs': {}}
    # the flavor's id, when the API found it (request.server_body)
    flavor_id = inst.get('flavor_id') or inst['flavor_name']
    return {'id': flavor_id,
            'links': [{'rel': 'bookmark',
                       'href': links.bookmark('flavors', flavor_id)}]}


def _host_id(inst):
    # Nova's hostId: the same host looks the same within one project only.
    if not inst.get('host'):
        return ''
    text = '%s%s' % (inst['project_id'], inst['host'])
    return hashlib.sha224(text.encode()).hexdigest()


def _progress(inst):
    if inst['task_id'] is None:
        return None
    return {'step': inst.get('progress_step'),
            'percent': inst.get('progress_percent') or 0}


def server_summary(inst, links):
    return {'id': inst['uuid'], 'name': inst['name'],
            'links': links.links('servers', inst['uuid'])}


# Nova's os-extended-server-attributes: where the server runs (admin-only
# by default, as in Nova).
EXTENDED_ATTRIBUTES = ('OS-EXT-SRV-ATTR:host',
                       'OS-EXT-SRV-ATTR:hypervisor_hostname',
                       'OS-EXT-SRV-ATTR:instance_name')


def server(inst, *, version, links, host_up=True, fault=None,
           extended=True, host_status=True):
    """The detailed body of one server (GET /servers/{id}, /servers/detail).

    ``extended`` and ``host_status`` say whether the caller may see the
    ``OS-EXT-SRV-ATTR:*`` keys and ``host_status`` (Nova's policies
    ``os-extended-server-attributes`` and ``servers:show:host_status``);
    keys the caller may not see are left out, as Nova does.
    """
    vm_state, task_state = inst['vm_state'], inst['task_state']
    body = server_summary(inst, links)
    body.update({
        'status': status.shown_status(vm_state, task_state, version),
        'tenant_id': inst['project_id'],
        'user_id': inst['user_id'],
        'created': isotime(inst['created_at']),
        'updated': isotime(inst['updated_at']),
        'hostId': _host_id(inst),
        'image': {'id': inst['image_ref'],
                  'links': [{'rel': 'bookmark',
                             'href': links.bookmark('images',
                                                    inst['image_ref'])}]},
        'flavor': _flavor(inst, version, links),
        'addresses': {},
        'accessIPv4': '',
        'accessIPv6': '',
        'key_name': None,
        'metadata': all_metadata(inst, version),
        'progress': inst.get('progress_percent') or 0,
        'config_drive': '',
        'locked': bool(inst.get('locked')),
        'description': inst.get('description'),
        'tags': list(inst.get('tags') or []),
        'OS-DCF:diskConfig': 'MANUAL',
        'OS-EXT-AZ:availability_zone': AVAILABILITY_ZONE,
        'OS-EXT-STS:vm_state': status.shown_vm_state(vm_state, version),
        'OS-EXT-STS:task_state': task_state,
        'OS-EXT-STS:power_state': inst['power_state'],
        'OS-EXT-SRV-ATTR:host': inst['host'],
        'OS-EXT-SRV-ATTR:hypervisor_hostname': inst['host'],
        'OS-EXT-SRV-ATTR:instance_name': 'instance-%s' % inst['uuid'],
        'OS-SRV-USG:launched_at': isotime(inst.get('launched_at')),
        'OS-SRV-USG:terminated_at': isotime(inst.get('hard_deleted_at')),
        'host_status': _host_status(inst, host_up),
        'tristate:task_id': inst['task_id'],
        'tristate:progress': _progress(inst),
        'tristate:power_state_name': states.power_state_name(
            inst['power_state']),
        'tristate:power_reason': inst.get('power_reason'),
        'tristate:oper_state': reconcile.oper_state(inst, host_up=host_up),
        'tristate:ec2_state': status.ec2_state(vm_state, task_state),
    })
    if version >= LOCKED_REASON:
        body['locked_reason'] = inst.get('locked_reason')
    if not extended:
        for key in EXTENDED_ATTRIBUTES:
            del body[key]
    if not host_status:
        del body['host_status']
    if fault is not None:
        body['fault'] = fault
    return body


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

def flavor(flv, links, *, detail=True):
    """One flavor, from its row (:mod:`common.db.flavors`)."""
    body = {'id': flv['flavorid'], 'name': flv['name'],
            'links': links.links('flavors', flv['flavorid'])}
    if detail:
        body.update({
            'vcpus': flv['vcpus'], 'ram': flv['memory_mb'],
            'disk': flv['disk_gb'], 'swap': flv.get('swap', 0),
            'OS-FLV-EXT-DATA:ephemeral': flv.get('ephemeral_gb', 0),
            'rxtx_factor': flv.get('rxtx_factor', 1.0),
            'OS-FLV-DISABLED:disabled': flv.get('disabled', False),
            'os-flavor-access:is_public': flv.get('is_public', True),
            'description': flv.get('description'),
            'extra_specs': flv.get('extra_specs') or {}})
    return body


# --- hosts (os-hypervisors) -------------------------------------------------------

def hypervisor(host, instances, *, detail=True):
    """One host, with what its agent reports and what is allocated on it."""
    mine = [i for i in instances if i.get('host') == host['name']]
    body = {'id': host['name'], 'hypervisor_hostname': host['name'],
            'state': 'up' if host['up'] else 'down',
            'status': 'enabled' if host.get('enabled', True) else 'disabled'}
    if not detail:
        return body
    counts = dict.fromkeys(reconcile.OPER_STATES, 0)
    for inst in mine:
        counts[reconcile.oper_state(inst, host_up=host['up'])] += 1
    body.update({
        'vcpus': host['vcpus'], 'vcpus_used': host['used_vcpus'],
        'memory_mb': host['memory_mb'],
        'memory_mb_used': host['used_memory_mb'],
        'local_gb': host['disk_gb'], 'local_gb_used': host['used_disk_gb'],
        'free_ram_mb': host['memory_mb'] - host['used_memory_mb'],
        'free_disk_gb': host['disk_gb'] - host['used_disk_gb'],
        'running_vms': len(mine), 'current_workload': 0,
        'hypervisor_type': 'tristate', 'hypervisor_version': 1,
        'host_ip': None, 'cpu_info': '{}',
        'service': {'host': host['name'], 'id': host['name'],
                    'disabled_reason': host.get('disabled_reason')},
        'tristate:last_heartbeat': isotime(host.get('last_heartbeat')),
        'tristate:oper_states': counts,
    })
    return body


# --- the action log (os-instance-actions) ----------------------------------------

def instance_action(entry, version):
    return {
        'action': entry['action'],
        'instance_uuid': entry['instance_uuid'],
        'request_id': entry.get('request_id') or entry['task_id'],
        'user_id': entry.get('user_id'),
        'project_id': entry.get('project_id'),
        'start_time': isotime(entry['started_at']),
        'updated_at': isotime(entry.get('finished_at')
                              or entry['started_at']),
        'message': entry.get('message'),
        'tristate:task_id': entry['task_id'],
        'tristate:result': entry['result'],
        'tristate:finish_time': isotime(entry.get('finished_at')),
        'tristate:vm_state_before': _shown(entry.get('vm_state_before'),
                                           version),
        'tristate:vm_state_after': _shown(entry.get('vm_state_after'),
                                          version),
    }


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
             'result': result,
             'tristate:task_id': entry['task_id'],
             'tristate:result': entry['result']}
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
