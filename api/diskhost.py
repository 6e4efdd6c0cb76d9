"""Nova's ``hostname`` and ``OS-DCF:diskConfig`` of a server (issue 22):
checked as Nova checks them on create, update (``PUT``), rebuild and
resize, and turned into the instance's columns (``hostname``,
``auto_disk_config``: migration 0018, conductor RPC 1.20).

``hostname``, from 2.90 (below it Nova's schema has no such field: 400):
an RFC 952 label of 2 to 63 characters (letters, digits, ``-``), from 2.94
an FQDN of 1 to 255 characters (letters, digits, ``-._``). One hostname is
for one server: a create of several with one is a 400, as Nova. It is
shown as ``OS-EXT-SRV-ATTR:hostname`` and written into the config drive's
``meta_data.json`` (conductor/flows.py, ``guest_params``).

``OS-DCF:diskConfig``: ``AUTO`` or ``MANUAL``. What Tristate does with
each (docs/operator-guide.md, "Disk config"): in both the root disk is
grown to the flavor's root size; Tristate never edits the partitions or
file systems inside it, so with AUTO the guest grows its root partition
and file system into the disk at boot (cloud-init's ``growpart`` and
``resizefs``, which cloud images run). An image whose ``auto_disk_config``
property is ``disabled`` refuses AUTO (Nova's 400); a create that names
none takes the image's property (``true``: AUTO), as Nova does.
"""

from oslo_utils import strutils

from api import microversion
from api import request
from api import schemas
from common import exception

V = microversion.APIVersion
HOSTNAME_SINCE = V(2, 90)
FQDN_SINCE = V(2, 94)
DISK_CONFIG = 'OS-DCF:diskConfig'
# Nova's parameter_types.hostname and parameter_types.fqdn.
HOSTNAME = {'type': 'string', 'minLength': 2, 'maxLength': 63,
            'pattern': '^[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+$'}
FQDN = {'type': 'string', 'minLength': 1, 'maxLength': 255,
        'pattern': '^[a-zA-Z0-9-._]*$'}
DISK_CONFIG_VALUES = {'type': 'string', 'enum': ['AUTO', 'MANUAL']}
# A rebuild's changes made before its task is claimed: the task writes the
# hostname into the new config drive.
BEFORE_REBUILD = ('hostname', 'auto_disk_config')


def _hostname(body, where, version):
    if 'hostname' not in body:
        return {}
    if version < HOSTNAME_SINCE:
        raise exception.Invalid(
            "Invalid input for field/attribute %s. Additional properties "
            "are not allowed ('hostname' was unexpected: it needs "
            "microversion 2.90 or later)" % where)
    schema = FQDN if version >= FQDN_SINCE else HOSTNAME
    schemas.validate({'type': 'object', 'properties': {where: {
        'type': 'object', 'properties': {'hostname': schema}}}},
        {where: {'hostname': body['hostname']}})
    return {'hostname': body['hostname']}


def _disk_config(body, where):
    if DISK_CONFIG not in body:
        return {}
    schemas.validate({'type': 'object', 'properties': {where: {
        'type': 'object', 'properties': {DISK_CONFIG: DISK_CONFIG_VALUES}}}},
        {where: {DISK_CONFIG: body[DISK_CONFIG]}})
    return {'auto_disk_config': body[DISK_CONFIG] == 'AUTO'}


def _image_says(image):
    """The image's ``auto_disk_config`` property (Tristate's catalogue
    keeps properties apart, Glance's answer has them at the top)."""
    if not image:
        return None
    props = image.get('properties') or image
    value = props.get('auto_disk_config')
    return value.strip().lower() if isinstance(value, str) else None


def _check_image(found, image):
    """Nova's refusal of AUTO on an image that disables it, and the
    image's default when the request names none."""
    said = _image_says(image)
    if found.get('auto_disk_config') and said == 'disabled':
        raise exception.Invalid(
            'Requested image %s has automatic disk resize disabled.'
            % image['id'])
    if 'auto_disk_config' not in found and said not in (None, 'disabled'):
        found['auto_disk_config'] = strutils.bool_from_string(said)
    return found


def of_create(body, image, count):
    """The create's columns: ``hostname`` (one server only) and
    ``auto_disk_config`` (only when AUTO: MANUAL is the column's
    default, and what a conductor before RPC 1.20 does)."""
    version = request.version()
    found = dict(_hostname(body, 'server', version),
                 **_disk_config(body, 'server'))
    if found.get('hostname') is not None and count > 1:
        raise exception.Invalid(
            'Unable to allocate a single hostname to multiple instances. '
            'Either specify a single instance via min_count/max_count or '
            'remove the hostname.')
    found = _check_image(found, image)
    if not found.get('auto_disk_config'):
        found.pop('auto_disk_config', None)
    return found


def of_update(body):
    """PUT /servers/{id}'s changes of both."""
    return dict(_hostname(body, 'server', request.version()),
                **_disk_config(body, 'server'))


def of_rebuild(body, image):
    """A rebuild's changes of both; AUTO is checked against its new
    image (``image()``, read only then)."""
    found = dict(_hostname(body, 'rebuild', request.version()),
                 **_disk_config(body, 'rebuild'))
    if found.get('auto_disk_config'):
        _check_image(found, image())
    return found


def of_resize(body):
    """A resize's disk config (Nova sets it on the instance)."""
    return _disk_config(body, 'resize')
