"""``tristate image create|list|show|delete``, and the lookup of an image
by name that ``tristate server create|rebuild|rescue --image`` use.

    truncate -s 1M /tmp/disk.raw
    tristate image create debian-12 --file /tmp/disk.raw
    tristate image list
    tristate server create web1 --flavor small --image debian-12 --wait

The commands speak Glance v2 (:class:`common.images.client.GlanceClient`)
to the image API, by default the one ``tristate-all`` and ``tristate-api``
serve under ``/image`` on the API's port (``--os-image-endpoint`` or
``TRISTATE_IMAGE_ENDPOINT`` for another, e.g. a real Glance), with the
command line's token. An upload streams the file chunk by chunk: an image
is never held in memory whatever its size.
"""

import os

from cliff import command
from cliff import lister
from cliff import show

from api.cli import client as client_mod
from common import exception
from common.images import client as glance

SHOW_FIELDS = ('id', 'name', 'status', 'visibility', 'owner', 'protected',
               'disk_format', 'container_format', 'size', 'virtual_size',
               'min_disk', 'min_ram', 'checksum', 'os_hash_algo',
               'os_hash_value', 'tags', 'properties', 'created_at',
               'updated_at')
# Keys of an image record that are not user properties.
_BASE_KEYS = frozenset(SHOW_FIELDS) | {
    'self', 'file', 'schema', 'direct_url', 'locations', 'os_hidden',
    'stores'}
LIST_FIELDS = ('ID', 'Name', 'Status', 'Visibility', 'Disk Format', 'Size')


def image_endpoint(api_endpoint):
    """The image API of ``tristate-all``/``tristate-api`` at
    ``api_endpoint``: its ``/image`` path."""
    base = (api_endpoint or client_mod.DEFAULT_ENDPOINT).rstrip('/')
    if base.endswith('/v2.1'):
        base = base[:-len('/v2.1')]
    return base + '/image'


class ImageService:
    """The image API as the command line uses it: every failure is an
    :class:`~api.cli.client.ApiError` with the service's reason."""

    def __init__(self, base_url, *, token=None, session=None, timeout=30.0):
        self.base_url = base_url
        self.glance = glance.GlanceClient(base_url, token=token,
                                          session=session, timeout=timeout)

    def call(self, method, *args, **kwargs):
        try:
            return getattr(self.glance, method)(*args, **kwargs)
        except glance.ImageServiceError as err:
            status = err.kwargs.get('status')
            if status is None:
                raise client_mod.ApiError(
                    'Cannot reach the image API at %s: %s. Set '
                    '--os-image-endpoint-override or '
                    'TRISTATE_IMAGE_ENDPOINT.'
                    % (self.base_url, err.kwargs.get('reason'))) from None
            raise client_mod.ApiError('%s (HTTP %s)' % (
                err.kwargs.get('reason'), status), status=status) from None
        except exception.TristateError as err:      # 404, 401, 403
            raise client_mod.ApiError(str(err), status=err.code) from None

    def find(self, name_or_id):
        """The image with this id, else the one image the user sees with
        this exact name; an error naming the candidates otherwise."""
        try:
            return self.glance.show(name_or_id)
        except glance.ImageNotFound:
            pass
        except exception.TristateError:
            pass        # a real Glance answers 400 to a name: look it up
        found = self.call('list', name=name_or_id)
        if len(found) == 1:
            return found[0]
        if not found:
            raise client_mod.ApiError(
                'No image with a name or ID of %r exists (see `tristate '
                'image list`).' % name_or_id, status=404)
        raise client_mod.ApiError(
            'More than one image is named %r: use its ID (%s).'
            % (name_or_id, ', '.join(i['id'] for i in found)), status=409)


def show_image(image):
    values = dict(image, properties={k: v for k, v in image.items()
                                     if k not in _BASE_KEYS})
    return SHOW_FIELDS, tuple(values.get(f) for f in SHOW_FIELDS)


class CreateImage(show.ShowOne):
    """Create an image and upload its file (streamed)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', help='Name of the new image.')
        parser.add_argument('--file', required=True, metavar='PATH',
                            help='The disk image to upload (any file is a '
                                 'valid raw image).')
        parser.add_argument('--disk-format', choices=('raw', 'qcow2'),
                            default='raw',
                            help='Format of the file (checked against its '
                                 'content). Default: raw.')
        parser.add_argument('--public', action='store_true',
                            help='Visible to every project (admin only). '
                                 'Default: the project\'s own.')
        parser.add_argument('--min-disk', type=int, metavar='GIB',
                            help='Smallest flavor disk it boots on.')
        parser.add_argument('--min-ram', type=int, metavar='MIB',
                            help='Smallest flavor RAM it boots with.')
        return parser

    def take_action(self, parsed_args):
        service = self.app.images
        try:
            data = open(parsed_args.file, 'rb')     # noqa: SIM115
        except OSError as err:
            raise client_mod.ApiError('Cannot read --file %s: %s'
                                      % (parsed_args.file, err.strerror)) \
                from None
        with data:
            fields = {'name': parsed_args.name,
                      'disk_format': parsed_args.disk_format,
                      'container_format': 'bare'}
            if parsed_args.public:
                fields['visibility'] = 'public'
            for key in ('min_disk', 'min_ram'):
                if getattr(parsed_args, key) is not None:
                    fields[key] = getattr(parsed_args, key)
            image = service.call('create', **fields)
            try:
                service.call('upload', image['id'], data,
                             size=os.fstat(data.fileno()).st_size)
            except client_mod.ApiError:
                self._forget(image['id'])
                raise
        return show_image(service.call('show', image['id']))

    def _forget(self, image_id):
        """A failed upload leaves no image behind (best effort)."""
        try:
            self.app.images.call('delete', image_id)
        except client_mod.ApiError as err:
            self.log.warning('Could not delete image %s after the failed '
                             'upload: %s', image_id, err)


class ListImages(lister.Lister):
    """Images you see: your project's, public ones, and shared ones you
    accepted."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--name', help='Only images with this name.')
        parser.add_argument('--status', help='Only images in this status '
                                             '(queued, active, ...).')
        parser.add_argument('--visibility',
                            choices=('public', 'private', 'shared',
                                     'community', 'all'),
                            help='Only images with this visibility.')
        return parser

    def take_action(self, parsed_args):
        filters = {key: getattr(parsed_args, key)
                   for key in ('name', 'status', 'visibility')
                   if getattr(parsed_args, key)}
        found = self.app.images.call('list', **filters)
        return LIST_FIELDS, [(i['id'], i.get('name'), i['status'],
                              i['visibility'], i.get('disk_format'),
                              i.get('size'))
                             for i in found]


class ShowImage(show.ShowOne):
    """Show one image's record (format, size, checksums, properties)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('image', help='Image name or ID.')
        return parser

    def take_action(self, parsed_args):
        return show_image(self.app.images.find(parsed_args.image))


class DeleteImage(command.Command):
    """Delete images (and their data)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('images', nargs='+', metavar='image',
                            help='Image names or IDs.')
        return parser

    def take_action(self, parsed_args):
        service = self.app.images
        ids = [service.find(i)['id'] for i in parsed_args.images]
        for image_id in ids:
            service.call('delete', image_id)


def commands():
    return {'image create': CreateImage, 'image list': ListImages,
            'image show': ShowImage, 'image delete': DeleteImage}
