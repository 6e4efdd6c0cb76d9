"""Who the command line is and where the APIs are: openstackclient's rules.

The options and variables are openstacksdk's and keystoneauth's, read by
their own loaders: ``--os-cloud`` / ``OS_CLOUD`` names a ``clouds.yaml``
entry (openstacksdk's search path, or ``OS_CLIENT_CONFIG_FILE``),
``OS_*`` variables make a cloud of their own, and ``--os-auth-type`` picks
a keystoneauth plugin whose options (``--os-username``, ``--os-token``,
``--os-application-credential-id``...) and ``OS_*`` variables keystoneauth
registers. With Keystone (``password``, ``token``,
``v3applicationcredential``, ...) the compute (``compute``) and image
(``image``) endpoints come from the catalog, unless
``--os-compute-endpoint-override`` / ``--os-image-endpoint-override`` (or
the cloud's ``compute_endpoint_override``...) name them.

Without any of that, the command line speaks to ``tristate-all`` as it
always did: keystoneauth's ``admin_token`` plugin with ``--os-endpoint``
(``OS_ENDPOINT``, ``TRISTATE_ENDPOINT``, default http://127.0.0.1:8774)
and ``--os-token`` (``OS_TOKEN``, ``TRISTATE_TOKEN``: noauth's
``USER:PROJECT``); with no token, keystoneauth's ``none`` plugin (the
API's default user). Those two plugins name one endpoint for everything:
the compute API is its ``/v2.1`` and the image API its ``/image``.
"""

import argparse
import os
import urllib.parse

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading
from openstack import exceptions as sdk_exceptions

DEFAULT_ENDPOINT = 'http://127.0.0.1:8774'
# keystoneauth plugins with one fixed endpoint and no catalog.
FIXED_ENDPOINT = ('admin_token', 'none', 'noauth')


class AuthError(Exception):
    """The configuration names no usable cloud or endpoint."""


def _has_cloud(config, cloud):
    return bool(cloud) or 'envvars' in config.get_cloud_names()


def register(parser, argv, config):
    """Add openstacksdk's ``--os-cloud`` and keystoneauth's auth and session
    options to ``parser``, for the plugin ``argv`` or the cloud selects."""
    env = os.environ.get
    parser.add_argument('--os-cloud', metavar='NAME',
                        default=env('OS_CLOUD'),
                        help='A cloud of clouds.yaml (env OS_CLOUD).')
    peek = argparse.ArgumentParser(add_help=False)
    peek.add_argument('--os-cloud', default=env('OS_CLOUD'))
    known, _ = peek.parse_known_args(argv)
    default = 'admin_token'
    if _has_cloud(config, known.os_cloud):
        try:
            default = config.get_one(cloud=known.os_cloud,
                                     validate=False).config['auth_type']
        except sdk_exceptions.ConfigException as err:
            raise AuthError(str(err)) from None
    loading.register_auth_argparse_arguments(parser, argv, default=default)
    loading.register_session_argparse_arguments(parser)
    for name, var, text in (
            ('region-name', 'OS_REGION_NAME', 'Region of the catalog.'),
            ('interface', 'OS_INTERFACE', 'Catalog interface: public, '
             'internal or admin.')):
        parser.add_argument('--os-%s' % name, metavar=name.upper(),
                            default=env(var),
                            help='%s (env %s)' % (text, var))
    for service, legacy in (('compute', None), ('image', 'TRISTATE_IMAGE_'
                                                         'ENDPOINT')):
        flags = ['--os-%s-endpoint-override' % service]
        if legacy:
            flags.append('--os-image-endpoint')
        parser.add_argument(
            *flags, metavar='URL', dest='os_%s_endpoint_override' % service,
            default=env(legacy) if legacy else None,
            help='The %s API, instead of the catalog\'s%s.' % (
                service, ' (env %s)' % legacy if legacy else ''))


def _fill_legacy(options, config):
    """``tristate``'s own variables and defaults, when no cloud (of
    clouds.yaml or of ``OS_*`` variables) says anything."""
    if (options.os_auth_type not in FIXED_ENDPOINT
            or _has_cloud(config, options.os_cloud)):
        return
    env = os.environ.get
    if not getattr(options, 'os_endpoint', None):
        options.os_endpoint = env('TRISTATE_ENDPOINT', DEFAULT_ENDPOINT)
    if options.os_auth_type == 'admin_token' and not options.os_token:
        options.os_token = env('TRISTATE_TOKEN')
        if not options.os_token:
            options.os_auth_type = 'none'


def cloud_region(options, config):
    """The openstacksdk CloudRegion the parsed ``options`` describe."""
    _fill_legacy(options, config)
    try:
        return config.get_one(argparse=options)
    except (sdk_exceptions.ConfigException,
            ks_exceptions.ClientException) as err:
        raise AuthError('%s. Set --os-cloud (clouds.yaml) or OS_* '
                        'variables; see `tristate --help`.' % err) from None


def _with_path(url, path):
    """``url`` with ``path`` unless it already names a version."""
    base = url.rstrip('/')
    parsed = urllib.parse.urlsplit(base)
    if '/v2' in parsed.path or parsed.path.endswith(path):
        return base
    return base + path


def _root(url):
    base = url.rstrip('/')
    if base.endswith('/v2.1'):
        base = base[:-len('/v2.1')]
    return base


PATHS = {'compute': '/v2.1', 'image': '/image'}


def endpoint(region, session, service):
    """The URL of ``service`` (``compute`` or ``image``) for this cloud
    region: its override, else the fixed endpoint's path, else the
    catalog's."""
    path = PATHS[service]
    url = region.config.get('%s_endpoint_override' % service)
    if not url and region.config.get('auth_type') in FIXED_ENDPOINT:
        url = _root(region.config.get('auth', {}).get('endpoint')
                    or DEFAULT_ENDPOINT) + path
    if not url:
        url = _from_catalog(region, session, service)
    return _with_path(url, path) if service == 'compute' else url


def _from_catalog(region, session, service):
    try:
        url = session.get_endpoint(service_type=service,
                                   interface=region.get_interface(),
                                   region_name=region.get_region_name())
    except ks_exceptions.EndpointNotFound:
        url = None
    except ks_exceptions.ClientException as err:
        raise AuthError('Cannot authenticate with %s: %s' % (
            region.config.get('auth_type'), err)) from None
    if not url:
        raise AuthError(
            'The catalog has no %s endpoint (interface %s, region %s): '
            'register Tristate with `tristate-manage catalog`, or set '
            '--os-%s-endpoint-override.' % (
                service, region.get_interface(), region.get_region_name(),
                service))
    return url


def project_id(region, session):
    """The project the credentials name: Keystone's scope, or noauth's
    ``USER:PROJECT`` token; None when they name none."""
    auth_type = region.config.get('auth_type')
    if auth_type == 'admin_token':
        token = region.config.get('auth', {}).get('token') or ''
        user, _, project = token.partition(':')
        return project or user or None
    if auth_type in FIXED_ENDPOINT:
        return None
    try:
        return session.get_project_id()
    except ks_exceptions.ClientException as err:
        raise AuthError('Cannot authenticate with %s: %s'
                        % (auth_type, err)) from None
