"""Version discovery (``GET /`` and ``GET /v2.1``, without authentication)
and ``GET /v2.1/extensions``.

``GET /`` lists ``v2.0`` and ``v2.1`` as Nova does (v2.0 deprecated);
``GET /v2`` answers v2.0's document, and Tristate serves nothing else of
v2.0. ``/extensions`` names, with Nova's aliases and
names, the legacy extensions whose features Tristate serves (Nova lists all
of its own; a client that looks for one Tristate lacks finds it missing).
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
# (alias, name, what it is here)
EXTENSIONS = (
    ('OS-DCF', 'DiskConfig', 'A server\'s OS-DCF:diskConfig (MANUAL).'),
    ('OS-EXT-AZ', 'ExtendedAvailabilityZone',
     'A server\'s availability zone.'),
    ('OS-EXT-SRV-ATTR', 'ExtendedServerAttributes',
     'Where a server runs (admins).'),
    ('OS-EXT-STS', 'ExtendedStatus', 'A server\'s vm_state, task_state '
     'and power_state.'),
    ('OS-FLV-DISABLED', 'FlavorDisabled', 'Whether a flavor is disabled.'),
    ('OS-FLV-EXT-DATA', 'FlavorExtraData', 'A flavor\'s ephemeral disk.'),
    ('OS-SRV-USG', 'ServerUsage', 'When a server was launched and ended.'),
    ('os-admin-actions', 'AdminActions', 'reset_state and forceDelete.'),
    ('os-create-backup', 'CreateBackup', 'Backups with rotation.'),
    ('os-flavor-access', 'FlavorAccess', 'Private flavors and the projects '
     'that may use them.'),
    ('os-flavor-extra-specs', 'FlavorExtraSpecs', 'A flavor\'s extra '
     'specs.'),
    ('os-flavor-manage', 'FlavorManage', 'Create and delete flavors.'),
    ('os-flavor-rxtx', 'FlavorRxtx', 'A flavor\'s rxtx_factor.'),
    ('os-flavor-swap', 'FlavorSwap', 'A flavor\'s swap.'),
    ('os-hypervisors', 'Hypervisors', 'The hosts and what they hold.'),
    ('os-instance-actions', 'InstanceActions', 'A server\'s action log.'),
    ('os-migrate-server', 'MigrateServer', 'Live migration.'),
    ('os-pause-server', 'PauseServer', 'Pause and unpause.'),
    ('os-quota-class-sets', 'QuotaClasses', 'The default quota class.'),
    ('os-quota-sets', 'Quotas', 'Per-project quotas.'),
    ('os-rescue', 'Rescue', 'Rescue and unrescue.'),
    ('os-services', 'Services', 'Disable, enable and force down hosts.'),
    ('os-simple-tenant-usage', 'SimpleTenantUsage', 'Usage per project.'),
    ('os-suspend-server', 'SuspendServer', 'Suspend and resume.'),
    ('os-used-limits', 'UsedLimits', 'What a project uses, in /limits.'),
)


def _extension(alias, name, description):
    return {'alias': alias, 'name': name, 'description': description,
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
    return {'extensions': [_extension(*e) for e in EXTENSIONS]}


@bp.get('/v2.1/extensions/<alias>')
def extension(alias):
    request.authorize('tristate:extensions')
    for entry in EXTENSIONS:
        if entry[0] == alias:
            return {'extension': _extension(*entry)}
    raise exception.NotFound('The resource could not be found.')

