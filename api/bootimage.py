"""The image a create, rebuild or rescue names: checked before anything is
claimed, as Nova checks it.

The image must exist, be visible to the caller's project and be ``active``;
the flavor must hold it (``min_ram``, ``min_disk``, and a disk no smaller
than the image's virtual size). Each failure is a 400 naming the image and
what was expected (Nova answers these with 400 too: ``ImageNotFound``,
``ImageNotActive``, ``FlavorMemoryTooSmall``, ``FlavorDiskSmallerThan*``).

Where the image is looked up: Tristate's own catalogue (the API tier reads
the database), or, with ``[image] api_endpoint``, the existing Glance, asked
with the caller's own token (what the caller may see there is what counts).
"""

from common import exception
from common import flavors
from common.db import images as images_db
from common.images import client as image_client

GIB = 1024 ** 3


class BadImage(exception.Invalid):
    msg_fmt = '%(reason)s'


def find(conf, statedb, ctx, image_id):
    """The image record ``ctx`` sees, or :class:`BadImage`."""
    try:
        if not conf.image.api_endpoint:
            return images_db.get_for_boot(statedb, ctx, image_id)
        return glance(conf, ctx).show(image_id)
    except (exception.NotFound, image_client.ImageForbidden):
        raise BadImage(reason='Image %s could not be found.'
                       % image_id) from None


def glance(conf, ctx):
    """A client of the existing Glance acting as the caller (its token)."""
    session = None
    if ctx.auth_token:
        from keystoneauth1 import session as ks_session
        from keystoneauth1 import token_endpoint
        session = ks_session.Session(auth=token_endpoint.Token(
            conf.image.api_endpoint, ctx.auth_token))
    return image_client.GlanceClient(conf.image.api_endpoint, session=session)


def check(conf, statedb, ctx, image_id, flavor_name=None):
    """The image if ``ctx`` may boot ``image_id`` with flavor
    ``flavor_name`` (None: the flavor is not changing); else BadImage."""
    image = find(conf, statedb, ctx, image_id)
    if image['status'] != 'active':
        raise BadImage(reason='Image %s is not active (status %s): only an '
                       'active image can be booted.'
                       % (image_id, image['status']))
    if flavor_name is not None:
        fits(image, flavors.get(conf, statedb, flavor_name, ctx))
    return image


def fits(image, flavor):
    """BadImage unless ``flavor`` is large enough for ``image``."""
    min_ram = image.get('min_ram') or 0
    if flavor.memory_mb < min_ram:
        raise BadImage(reason="Flavor's memory is too small for requested "
                       "image: flavor %s has %d MiB, image %s needs %d MiB "
                       "(min_ram)." % (flavor.name, flavor.memory_mb,
                                       image['id'], min_ram))
    disk = flavor.disk_gb * GIB
    if flavor.disk_gb == 0:
        return      # Nova's rule: a 0 GB root disk takes the image's size
    min_disk = (image.get('min_disk') or 0) * GIB
    if disk < min_disk:
        raise BadImage(reason="Flavor's disk is too small for requested "
                       "image. Flavor disk is %d bytes, minimum size is %d "
                       "bytes (min_disk of image %s)." % (disk, min_disk,
                                                         image['id']))
    size = image.get('virtual_size') or image.get('size') or 0
    if disk < size:
        raise BadImage(reason="Flavor's disk is too small for requested "
                       "image. Flavor disk is %d bytes, image is %d bytes "
                       "(image %s)." % (disk, size, image['id']))
