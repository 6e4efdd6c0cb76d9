"""The image API's JSON schemas, as Glance v2 publishes them
(``/v2/schemas/image``, ``/images``, ``/member``, ``/members``) and checks
bodies with: base attributes typed, any other attribute a string (an extra
property). Clients fetch them (glanceclient builds its PATCH from the image
schema), so the shapes are Glance's; only the format enums are ours
(``raw``/``qcow2``, ``bare``).
"""

import jsonschema

from common import exception
from common.db import images

UUID_PATTERN = ('^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}'
                '-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$')


def _prop(kind, description, read_only=False, **extra):
    prop = {'type': kind, 'description': description}
    if read_only:
        prop['readOnly'] = True
    prop.update(extra)
    return prop


def _nullable(kind):
    return ['null', kind]


def base_properties():
    return {
        'id': _prop('string', 'An identifier for the image',
                    pattern=UUID_PATTERN),
        'name': _prop(_nullable('string'), 'Descriptive name for the image',
                      maxLength=255),
        'status': _prop('string', 'Status of the image', True,
                        enum=list(images.STATUSES)),
        'visibility': _prop('string', 'Scope of image accessibility',
                            enum=list(images.VISIBILITIES)),
        'protected': _prop('boolean',
                           'If true, image will not be deletable.'),
        'os_hidden': _prop('boolean', 'If true, image will not appear in '
                           'default image list response.'),
        'checksum': _prop(_nullable('string'), 'md5 hash of image contents.',
                          True, maxLength=32),
        'os_hash_algo': _prop(_nullable('string'), 'Algorithm to calculate '
                              'the os_hash_value', True, maxLength=64),
        'os_hash_value': _prop(_nullable('string'), 'Hexdigest of the image '
                               'contents using the algorithm specified by '
                               'the os_hash_algo', True, maxLength=128),
        'owner': _prop(_nullable('string'), 'Owner of the image',
                       maxLength=255),
        'size': _prop(_nullable('integer'), 'Size of image file in bytes',
                      True),
        'virtual_size': _prop(_nullable('integer'),
                              'Virtual size of image in bytes', True),
        'container_format': _prop(
            _nullable('string'), 'Format of the container',
            enum=[None, *images.CONTAINER_FORMATS]),
        'disk_format': _prop(_nullable('string'), 'Format of the disk',
                             enum=[None, *images.DISK_FORMATS]),
        'created_at': _prop('string', 'Date and time of image registration',
                            True),
        'updated_at': _prop('string', 'Date and time of the last image '
                            'modification', True),
        'tags': _prop('array', 'List of strings related to the image',
                      items={'type': 'string', 'maxLength': 255}),
        'min_ram': _prop('integer', 'Amount of ram (in MB) required to boot '
                         'image.'),
        'min_disk': _prop('integer', 'Amount of disk space (in GB) required '
                          'to boot image.'),
        'self': _prop('string', 'An image self url', True),
        'file': _prop('string', 'An image file url', True),
        'schema': _prop('string', 'An image schema url', True),
    }


def image_schema():
    return {
        'name': 'image',
        'properties': base_properties(),
        'additionalProperties': {'type': 'string'},
        'links': [{'rel': 'self', 'href': '{self}'},
                  {'rel': 'enclosure', 'href': '{file}'},
                  {'rel': 'describedby', 'href': '{schema}'}],
    }


def images_schema():
    return {
        'name': 'images',
        'properties': {
            'images': {'type': 'array', 'items': image_schema()},
            'first': {'type': 'string'},
            'next': {'type': 'string'},
            'schema': {'type': 'string'},
        },
        'links': [{'rel': 'first', 'href': '{first}'},
                  {'rel': 'next', 'href': '{next}'},
                  {'rel': 'describedby', 'href': '{schema}'}],
    }


def member_schema():
    return {
        'name': 'member',
        'properties': {
            'created_at': {'type': 'string', 'description': 'Date and time '
                           'of image member creation'},
            'image_id': {'type': 'string', 'description': 'An identifier '
                         'for the image', 'pattern': UUID_PATTERN},
            'member_id': {'type': 'string', 'description': 'An identifier '
                          'for the image member (tenantId)'},
            'status': {'type': 'string', 'description': 'The status of '
                       'this image member',
                       'enum': list(images.MEMBER_STATUSES)},
            'updated_at': {'type': 'string', 'description': 'Date and time '
                           'of last modification of image member'},
            'schema': {'type': 'string', 'readOnly': True},
        },
    }


def members_schema():
    return {
        'name': 'members',
        'properties': {
            'members': {'type': 'array', 'items': member_schema()},
            'schema': {'type': 'string'},
        },
        'links': [{'rel': 'describedby', 'href': '{schema}'}],
    }


_VALIDATOR = jsonschema.Draft4Validator(image_schema())


def validate(body):
    """400 naming the field and what it must be, as Glance's "Provided
    object does not match schema 'image'"."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(body))
    if error is None:
        return
    field = '/'.join(str(p) for p in error.absolute_path) or '(body)'
    raise exception.Invalid(
        "Provided object does not match schema 'image': %s: %s"
        % (field, error.message))
