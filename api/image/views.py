"""The image API's bodies, as Glance 2.x answers them: an image is its
attributes plus its extra properties flattened beside them, with links
relative to the API (``/v2/images/ID``), never its store location."""

from api import views as compute_views

ATTRIBUTES = ('name', 'disk_format', 'container_format', 'visibility',
              'size', 'virtual_size', 'status', 'checksum', 'protected',
              'min_ram', 'min_disk', 'owner', 'os_hidden', 'os_hash_algo',
              'os_hash_value')
# The versions Glance 2.7 (os_hidden, os_hash_*) and before answer with.
VERSIONS = ('2.7', '2.6', '2.5', '2.4', '2.3', '2.2', '2.1', '2.0')


isotime = compute_views.isotime


def href(image_id, sub=''):
    base = '/v2/images/%s' % image_id
    return '%s/%s' % (base, sub) if sub else base


def image(row):
    view = {k: v if v is not None else '' for k, v in
            (row['properties'] or {}).items()}
    for key in ATTRIBUTES:
        view[key] = row[key]
    view.update(id=row['id'], created_at=isotime(row['created_at']),
                updated_at=isotime(row['updated_at']),
                tags=list(row['tags'] or ()), self=href(row['id']),
                file=href(row['id'], 'file'), schema='/v2/schemas/image')
    return view


def member(row):
    return {'member_id': row['member'], 'image_id': row['image_id'],
            'status': row['status'],
            'created_at': isotime(row['created_at']),
            'updated_at': isotime(row['updated_at']),
            'schema': '/v2/schemas/member'}


def versions(base_url):
    href_v2 = base_url.rstrip('/') + '/v2/'
    return {'versions': [
        {'id': 'v%s' % v, 'status': 'CURRENT' if i == 0 else 'SUPPORTED',
         'links': [{'rel': 'self', 'href': href_v2}]}
        for i, v in enumerate(VERSIONS)]}
