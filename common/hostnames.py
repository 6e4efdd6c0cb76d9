"""A server's hostname, as Nova derives it from the display name: shown by
the API (``OS-EXT-SRV-ATTR:hostname``) and written into the guest's config
drive (``meta_data.json``), one rule for both. A hostname the user gave
(Nova's ``hostname``, 2.90; an FQDN from 2.94) is kept on the instance and
wins over the derived one (:func:`of_instance`)."""

import re

_DASH = re.compile(r'[ _.]')
_DROP = re.compile(r'[^A-Za-z0-9-]+')


def of(name, uuid):
    """``name`` with spaces, ``_`` and ``.`` made ``-``, other characters
    but letters and digits dropped, lowercase, at most 63 characters;
    ``server-UUID`` when nothing is left."""
    name = _DROP.sub('', _DASH.sub('-', name or '')).lower()[:63].strip('-.')
    return name or 'server-%s' % uuid


def of_instance(inst):
    """The instance's hostname: the one the user gave, else :func:`of`
    its name."""
    return inst.get('hostname') or of(inst['name'], inst['uuid'])
