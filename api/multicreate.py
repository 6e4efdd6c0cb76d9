"""``POST /servers`` with ``min_count``/``max_count``: one request, several
servers, as Nova makes them (issue 22).

Each server is an instance of its own, named ``name-1`` .. ``name-N`` when
more than one is made (Nova's default ``multi_instance_display_name_template``),
all sharing the request's reservation id (``r-`` and 8 characters, Nova's
``reservation_id``, a list filter) and numbered by ``launch_index``.

Quota is all or nothing, as Nova: as many as the project's quota has room
for, up to ``max_count``; fewer than ``min_count`` is Nova's 403 and makes
none. The check reads the project's usage first; each create is still
checked by its own conditional UPDATE (common/db/quotas.py), and if one of
them is refused (another request took the room meanwhile) the servers this
request made are hard-deleted before the 403 is answered.
"""

import secrets
import string

from api import request
from common import exception

_RID_CHARS = string.ascii_lowercase + string.digits
_PER_INSTANCE = {'instances': lambda f: 1, 'cores': lambda f: f.vcpus,
                 'ram': lambda f: f.memory_mb, 'disk': lambda f: f.disk_gb}


def reservation_id():
    """``r-`` and 8 of a-z 0-9, as Nova's: from one draw of 48 random bits
    (a choice per character drew the kernel's randomness up to twice each,
    on every create)."""
    bits = secrets.randbits(48)
    chars = []
    for _ in range(8):
        bits, index = divmod(bits, len(_RID_CHARS))
        chars.append(_RID_CHARS[index])
    return 'r-' + ''.join(chars)


def counts(body):
    """(min_count, max_count) of a validated create body."""
    low = int(body.get('min_count', 1))
    high = int(body.get('max_count', low))
    if low > high:
        raise exception.Invalid(
            'Invalid input for field/attribute server.min_count. Value: %d. '
            'min_count must be <= max_count (%d)' % (low, high))
    return low, high


def _room(project_id, flavor, low, high):
    """How many servers of ``flavor`` the project's quota has room for
    (at most ``high``); Nova's 403 below ``low``."""
    found = request.services().client.statedb.get_quotas(project_id)
    room = high
    for resource, per in _PER_INSTANCE.items():
        limit = found['limits'].get(resource, -1)
        need = per(flavor)
        if limit < 0 or need <= 0:
            continue
        used = found['usage'].get(resource, 0)
        fits = max(0, (limit - used) // need)
        if fits < low:
            raise exception.QuotaExceeded(
                resource=resource, requested=need * low, used=used,
                limit=limit, project=project_id)
        room = min(room, fits)
    return room


def create(*, name, flavor, low, high, create_one):
    """Make ``low``..``high`` servers by calling ``create_one(name=...,
    launch_index=...)``; returns the instances made."""
    count = high
    if high > 1:
        count = _room(request.context().project_id, flavor, low, high)
    made = []
    try:
        for index in range(count):
            shown = name if count == 1 else '%s-%d' % (name, index + 1)
            made.append(create_one(name=shown, launch_index=index))
    except Exception:
        _undo(made)
        raise
    return made


def _undo(made):
    client, ctx = request.services().client, request.context()
    for inst in made:
        try:
            client.delete_instance(ctx, inst['uuid'])
        except exception.TristateError:
            pass          # already gone; nothing else holds it
