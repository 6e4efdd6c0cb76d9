"""What ``POST /servers`` says of access to the guest (issue 24):
``key_name``, ``user_data`` and ``config_drive``, checked here and turned
into the new instance's attributes (stored on its row, sent to its agent
in the build task, written into its config drive).

* ``key_name``: one of the caller's key pairs (Nova looks it up for the
  requesting user); the instance keeps its name and its public key as they
  are now (``key_data``), so deleting the key pair later changes no server.
* ``user_data``: base64 text, at most :data:`MAX_USER_DATA` bytes once
  decoded; kept as sent.
* ``config_drive``: Nova's boolean; the conductor adds ``[compute]
  force_config_drive``.

A rebuild takes a new ``key_name`` (2.54) and ``user_data`` (2.57), each
null to remove it (api/routes/server_actions.py), checked the same way.

``adminPass`` (create and rebuild, :func:`admin_password`): the request's,
else one generated (``[api] password_length``) when ``[api]
enable_instance_password`` answers it. It travels to the agent in the build
or rebuild task only (conductor RPC 1.17, agent RPC 1.7), never stored or
logged, and reaches the guest as ``admin_pass`` in its config drive's
meta_data.json (there is no metadata service and no injection). So a
request that *gives* one gets a config drive for that instance (as
``config_drive: true``); with ``config_drive: false`` it is refused (400),
there being no other way to deliver it. A generated one is delivered when
the instance has a config drive anyway (``config_drive``, ``[compute]
force_config_drive``), as Nova's is only where a config drive or metadata
service carries it.
"""

import base64
import binascii
import json

from oslo_utils import strutils

from api import actions
from api import request
from common import exception

# Nova's limit on user data, decoded: 64 KiB.
MAX_USER_DATA = 65536
# The conductor RPC that carries an admin password to the build/rebuild.
ADMIN_PASS_RPC = '1.17'
# What an error message shows of a password.
HIDDEN = '<hidden>'


def _invalid(field, value, why, where='server'):
    return exception.Invalid(
        'Invalid input for field/attribute %s.%s. Value: %s. %s'
        % (where, field, json.dumps(value)[:100], why))


def user_data(value, where='server'):
    """``value`` if it is base64 of at most :data:`MAX_USER_DATA` bytes;
    a 400 naming ``user_data`` otherwise."""
    if not isinstance(value, str):
        raise _invalid('user_data', value, 'user_data must be a string of '
                       'base64 text', where)
    text = ''.join(value.split())
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _invalid('user_data', value, 'user_data is not valid base64 '
                       '(RFC 4648, "+/" alphabet, "=" padding)',
                       where) from None
    if len(data) > MAX_USER_DATA:
        raise _invalid('user_data', '%d bytes' % len(data),
                       'user_data is %d bytes once decoded; the limit is '
                       '%d bytes (64 KiB)' % (len(data), MAX_USER_DATA),
                       where)
    return text


def config_drive(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return strutils.bool_from_string(value, strict=True)
        except ValueError:
            pass
    raise _invalid('config_drive', value, 'config_drive must be a boolean '
                   '(true, false, or a string of one)')


def key_pair(name, where='server'):
    """``{'key_name', 'key_data'}`` of the caller's key pair ``name``."""
    if not isinstance(name, str) or not name:
        raise _invalid('key_name', name, 'key_name must be the name of one '
                       'of your key pairs', where)
    ctx = request.context()
    try:
        found = request.services().client.statedb.get_keypair(
            ctx.user_id or '', name)
    except exception.NotFound:
        raise _invalid('key_name', name, 'Invalid key_name provided: you '
                       'have no key pair of that name (os-keypairs)',
                       where) from None
    return {'key_name': found['name'], 'key_data': found['public_key']}


def attributes(body):
    """The new instance's attributes from a validated create ``body``."""
    found = {}
    if body.get('key_name') is not None:
        found.update(key_pair(body['key_name']))
    if body.get('user_data') is not None:
        found['user_data'] = user_data(body['user_data'])
    if body.get('config_drive') not in (None, ''):
        found['config_drive'] = config_drive(body['config_drive'])
    return found


def admin_password(body, found, where='server'):
    """The admin password of a create or rebuild ``body`` (see the module's
    docstring), or None: none asked for and none to answer, or conductors
    too old to carry one. A password the request gives makes the
    instance's config drive (``found['config_drive'] = True``; a create's
    explicit ``config_drive: false`` is a 400)."""
    svc = request.services()
    given = body.get('adminPass')
    if given is None:
        if (not svc.conf.api.enable_instance_password
                or not svc.client.can_send(ADMIN_PASS_RPC)):
            return None
        return actions.generate_password(svc.conf.api.password_length)
    if found.get('config_drive') is False:
        raise _invalid('adminPass', HIDDEN, 'adminPass reaches the guest '
                       'only through its config drive (meta_data.json '
                       'admin_pass): it cannot go with config_drive false',
                       where)
    if not svc.client.can_send(ADMIN_PASS_RPC):
        raise exception.ServiceUnavailable(
            reason='adminPass is not supported until the conductors are '
                   'upgraded: it needs conductor RPC API %s' % ADMIN_PASS_RPC)
    found['config_drive'] = True
    return given
