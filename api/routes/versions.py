"""Version discovery (``GET /`` and ``GET /v2.1``, without authentication)
and ``GET /v2.1/extensions``.

``GET /`` lists ``v2.0`` and ``v2.1`` as Nova does (v2.0 deprecated);
``GET /v2`` answers v2.0's document, and Tristate serves nothing else of
v2.0. ``/extensions`` answers Nova's frozen list of legacy extensions (all
of them, as Nova does whatever it serves); the description of each says
what Tristate serves of it, or that it serves none of it.
"""

import flask

from api import request
from api import views
from common import exception

bp = flask.Blueprint('versions', __name__)

V2_0 = {'id': 'v2.0', 'status': 'DEPRECATED', 'version': '',
        'min_version': '', 'updated': '2025-07-04T12:00:00Z'}
_UPDATED = '2014-12-03T00:00:00Z'
_NAMESPACE = 'http://docs.openstack.org/compute/ext/fake_xml'
# Tristate's description of each legacy extension whose feature it serves.
SERVED = {
    'OS-DCF': 'A server\'s OS-DCF:diskConfig (AUTO or MANUAL).',
    'OS-EXT-AZ': 'A server\'s availability zone.',
    'OS-EXT-IMG-SIZE': 'An image\'s size in the image proxy.',
    'OS-EXT-SRV-ATTR': 'Where a server runs (admins).',
    'OS-EXT-STS': 'A server\'s vm_state, task_state and power_state.',
    'OS-FLV-DISABLED': 'Whether a flavor is disabled.',
    'OS-FLV-EXT-DATA': 'A flavor\'s ephemeral disk.',
    'OS-SCH-HNT': 'The reservation (a lease\'s), group (a server '
                  'group\'s), same_host and different_host scheduler '
                  'hints; other hints are refused.',
    'OS-SRV-USG': 'When a server was launched and ended.',
    'os-access-ips': 'accessIPv4/accessIPv6, kept as the user sets them.',
    'os-admin-actions': 'os-resetState and forceDelete.',
    'os-block-device-mapping-v2-boot': 'The image root disk\'s mapping '
                                       'only.',
    'os-create-backup': 'Backups with rotation.',
    'os-deferred-delete': 'restore and forceDelete of a soft-deleted '
                          'server.',
    'os-extended-rescue-with-image': 'Rescue from a chosen image.',
    'os-extended-services': 'Disabling a service with a reason.',
    'os-extended-services-delete': 'Deleting a service.',
    'os-extended-status': 'A server\'s vm_state, task_state and '
                          'power_state.',
    'os-flavor-access': 'Private flavors and the projects that may use '
                        'them.',
    'os-flavor-extra-specs': 'A flavor\'s extra specs (those Tristate '
                             'acts on).',
    'os-flavor-manage': 'Create and delete flavors.',
    'os-flavor-rxtx': 'A flavor\'s rxtx_factor.',
    'os-flavor-swap': 'A flavor\'s swap.',
    'os-hosts': 'The compute hosts (Nova\'s deprecated hosts API).',
    'os-hypervisor-status': 'A hypervisor\'s state and status.',
    'os-hypervisors': 'The hosts and what they hold.',
    'os-instance-actions': 'A server\'s action log.',
    'os-instance_usage_audit_log': 'The usage audit log.',
    'os-lock-server': 'Lock and unlock.',
    'os-migrate-server': 'Live migration (no cold migration yet).',
    'os-multiple-create': 'min_count and max_count.',
    'os-pause-server': 'Pause and unpause.',
    'os-preserve-ephemeral-rebuild': 'preserve_ephemeral (no ephemeral '
                                     'disks: true to either way).',
    'os-quota-class-sets': 'Quota classes.',
    'os-quota-sets': 'Per-project quotas.',
    'os-rescue': 'Rescue and unrescue.',
    'os-server-diagnostics': 'A server\'s diagnostics from its '
                             'hypervisor (admins).',
    'os-server-external-events': 'External events (admins), answered per '
                                 'event.',
    'os-server-group-quotas': 'The server_groups and '
                              'server_group_members quotas.',
    'os-server-groups': 'Server groups: affinity, anti-affinity (with '
                        'max_server_per_host), soft-affinity, '
                        'soft-anti-affinity.',
    'os-server-list-multi-status': 'Several status filters at once.',
    'os-server-password': 'A server\'s encrypted password.',
    'os-server-sort-keys': 'Sorting the server list.',
    'os-server-start-stop': 'Start and stop.',
    'os-services': 'Disable, enable and force down hosts.',
    'os-simple-tenant-usage': 'Usage per project.',
    'os-suspend-server': 'Suspend and resume.',
    'os-used-limits': 'What a project uses, in /limits.',
    'os-used-limits-for-admin': 'Another project\'s limits, for admins.',
}
# Every alias and name Nova lists (its frozen v2.1 list, all 99, in its
# order): Nova answers the whole list whatever it serves, and clients and
# Tempest look entries up by alias. Those Tristate does not serve say so.
NOVA_EXTENSIONS = tuple(tuple(line.split()) for line in """
NMN Multinic
OS-DCF DiskConfig
OS-EXT-AZ ExtendedAvailabilityZone
OS-EXT-IMG-SIZE ImageSize
OS-EXT-IPS ExtendedIps
OS-EXT-IPS-MAC ExtendedIpsMac
OS-EXT-SRV-ATTR ExtendedServerAttributes
OS-EXT-STS ExtendedStatus
OS-FLV-DISABLED FlavorDisabled
OS-FLV-EXT-DATA FlavorExtraData
OS-SCH-HNT SchedulerHints
OS-SRV-USG ServerUsage
os-access-ips AccessIPs
os-admin-actions AdminActions
os-admin-password AdminPassword
os-agents Agents
os-aggregates Aggregates
os-assisted-volume-snapshots AssistedVolumeSnapshots
os-attach-interfaces AttachInterfaces
os-availability-zone AvailabilityZone
os-baremetal-ext-status BareMetalExtStatus
os-baremetal-nodes BareMetalNodes
os-block-device-mapping BlockDeviceMapping
os-block-device-mapping-v2-boot BlockDeviceMappingV2Boot
os-cell-capacities CellCapacities
os-cells Cells
os-certificates Certificates
os-cloudpipe Cloudpipe
os-cloudpipe-update CloudpipeUpdate
os-config-drive ConfigDrive
os-console-auth-tokens ConsoleAuthTokens
os-console-output ConsoleOutput
os-consoles Consoles
os-create-backup CreateBackup
os-create-server-ext Createserverext
os-deferred-delete DeferredDelete
os-evacuate Evacuate
os-extended-evacuate-find-host ExtendedEvacuateFindHost
os-extended-floating-ips ExtendedFloatingIps
os-extended-hypervisors ExtendedHypervisors
os-extended-networks ExtendedNetworks
os-extended-quotas ExtendedQuotas
os-extended-rescue-with-image ExtendedRescueWithImage
os-extended-services ExtendedServices
os-extended-services-delete ExtendedServicesDelete
os-extended-status ExtendedStatus
os-extended-volumes ExtendedVolumes
os-fixed-ips FixedIPs
os-flavor-access FlavorAccess
os-flavor-extra-specs FlavorExtraSpecs
os-flavor-manage FlavorManage
os-flavor-rxtx FlavorRxtx
os-flavor-swap FlavorSwap
os-floating-ip-dns FloatingIpDns
os-floating-ip-pools FloatingIpPools
os-floating-ips FloatingIps
os-floating-ips-bulk FloatingIpsBulk
os-fping Fping
os-hide-server-addresses HideServerAddresses
os-hosts Hosts
os-hypervisor-status HypervisorStatus
os-hypervisors Hypervisors
os-instance-actions InstanceActions
os-instance_usage_audit_log OSInstanceUsageAuditLog
os-keypairs Keypairs
os-lock-server LockServer
os-migrate-server MigrateServer
os-migrations Migrations
os-multiple-create MultipleCreate
os-networks Networks
os-networks-associate NetworkAssociationSupport
os-pause-server PauseServer
os-personality Personality
os-preserve-ephemeral-rebuild PreserveEphemeralOnRebuild
os-quota-class-sets QuotaClasses
os-quota-sets Quotas
os-rescue Rescue
os-security-group-default-rules SecurityGroupDefaultRules
os-security-groups SecurityGroups
os-server-diagnostics ServerDiagnostics
os-server-external-events ServerExternalEvents
os-server-group-quotas ServerGroupQuotas
os-server-groups ServerGroups
os-server-list-multi-status ServerListMultiStatus
os-server-password ServerPassword
os-server-sort-keys ServerSortKeys
os-server-start-stop ServerStartStop
os-services Services
os-shelve Shelve
os-simple-tenant-usage SimpleTenantUsage
os-suspend-server SuspendServer
os-tenant-networks OSTenantNetworks
os-used-limits UsedLimits
os-used-limits-for-admin UsedLimitsForAdmin
os-user-data UserData
os-user-quotas UserQuotas
os-virtual-interfaces VirtualInterfaces
os-volume-attachment-update VolumeAttachmentUpdate
os-volumes Volumes
""".strip().splitlines())
NOT_SERVED = 'Not served by Tristate: Nova lists it for compatibility.'


def _extension(alias, name):
    return {'alias': alias, 'name': name,
            'description': SERVED.get(alias, NOT_SERVED),
            'links': [], 'namespace': _NAMESPACE, 'updated': _UPDATED}


@bp.get('/')
def versions():
    links = request.links()
    current = views.version_doc(links)
    listed = []
    for doc, path in ((V2_0, 'v2/'), (current, 'v2.1/')):
        body = {k: doc[k] for k in ('id', 'status', 'version', 'min_version',
                                    'updated')}
        body['links'] = [{'rel': 'self', 'href': links.bookmark(path)}]
        listed.append(body)
    return {'versions': listed}


@bp.get('/v2', strict_slashes=False)
def legacy_version():
    """The v2.0 document (its self link is GET /'s): clients that follow
    every listed version find it; Tristate serves no v2.0 resource."""
    links = request.links()
    doc = dict(V2_0)
    doc['links'] = [{'rel': 'self', 'href': links.bookmark('v2/')},
                    {'rel': 'describedby', 'type': 'text/html',
                     'href': 'https://docs.openstack.org/'}]
    doc['media-types'] = [{
        'base': 'application/json',
        'type': 'application/vnd.openstack.compute+json;version=2'}]
    return {'version': doc}


@bp.get('/v2.1', strict_slashes=False)
def version():
    return {'version': views.version_doc(request.links())}


@bp.get('/v2.1/extensions')
def extensions():
    request.authorize('tristate:extensions')
    return {'extensions': [_extension(*e) for e in NOVA_EXTENSIONS]}


@bp.get('/v2.1/extensions/<alias>')
def extension(alias):
    request.authorize('tristate:extensions')
    for entry in NOVA_EXTENSIONS:
        if entry[0] == alias:
            return {'extension': _extension(*entry)}
    raise exception.NotFound('The resource could not be found.')

