"""``tristate-manage catalog``: register Tristate in a Keystone catalog.

    tristate-manage catalog --public-url http://API:8774 [--internal-url U]
        [--admin-url U] [--region RegionOne] [--no-image]   # print the commands
    tristate-manage catalog --public-url http://API:8774 --register [--os-cloud C]

Tristate answers as three services: the compute API (type ``compute``, at
``URL/v2.1``), the image API (type ``image``, Glance v2, at ``URL/image``;
``--no-image`` when a real Glance is registered instead) and the
reservation API (type ``reservation``, Blazar v1's leases and hosts, at
``URL/reservation/v1``, where python-blazarclient looks for it).
Without ``--register`` it prints the ``openstack`` commands an operator
runs; with it, it makes them itself as the Keystone admin that
openstacksdk's loader finds (``--os-cloud``/``OS_CLOUD`` and
``clouds.yaml``, or ``OS_*`` variables), through identity v3 at the
credentials' ``auth_url``. A service of that type and an endpoint with the
same interface, region and URL already there are kept, so running it twice
changes nothing.
"""

import shlex

SERVICES = (
    # (type, name, description, path under the API's URL)
    ('compute', 'tristate', 'Tristate compute API (Nova-compatible)',
     '/v2.1'),
    ('image', 'tristate-image', 'Tristate image API (Glance v2)', '/image'),
    ('reservation', 'tristate-reservation',
     'Tristate reservation API (Blazar v1)', '/reservation/v1'),
)
INTERFACES = ('public', 'internal', 'admin')


class CatalogError(Exception):
    """Keystone refused, or the credentials are missing."""


def wanted(args):
    """[(service type, name, description, [(interface, url)])]."""
    out = []
    for kind, name, text, path in SERVICES:
        if kind == 'image' and args.no_image:
            continue
        urls = [(iface, getattr(args, '%s_url' % iface).rstrip('/') + path)
                for iface in INTERFACES if getattr(args, '%s_url' % iface)]
        out.append((kind, name, text, urls))
    return out


def commands(args):
    """The ``openstack`` command lines that register ``wanted(args)``."""
    lines = []
    for kind, name, text, urls in wanted(args):
        lines.append(shlex.join(['openstack', 'service', 'create', '--name',
                                 name, '--description', text, kind]))
        lines.extend(shlex.join(['openstack', 'endpoint', 'create',
                                 '--region', args.catalog_region, kind, iface, url])
                     for iface, url in urls)
    return lines


class Identity:
    """Identity v3's services and endpoints over a keystoneauth session."""

    def __init__(self, session, url):
        self.session, self.url = session, url.rstrip('/')
        if not self.url.endswith('/v3'):
            self.url += '/v3'

    def _call(self, method, path, body=None):
        resp = self.session.request(self.url + path, method, json=body,
                                    raise_exc=False)
        if resp.status_code >= 400:
            raise CatalogError('%s %s: HTTP %d %s' % (
                method, path, resp.status_code, resp.text[:200]))
        return resp.json()

    def service(self, kind, name, text):
        """The id of the service of type ``kind``, made if there is none."""
        found = [s for s in self._call('GET', '/services')['services']
                 if s['type'] == kind]
        if found:
            return found[0]['id'], False
        made = self._call('POST', '/services', {'service': {
            'type': kind, 'name': name, 'description': text,
            'enabled': True}})['service']
        return made['id'], True

    def endpoint(self, service_id, interface, url, region):
        """True if made, False if one with these values was there."""
        for found in self._call('GET', '/endpoints')['endpoints']:
            if (found['service_id'], found['interface'], found['url'],
                    found.get('region_id') or found.get('region')) == (
                    service_id, interface, url, region):
                return False
        self._call('POST', '/endpoints', {'endpoint': {
            'service_id': service_id, 'interface': interface, 'url': url,
            'region_id': region, 'enabled': True}})
        return True


def _identity(cloud):
    """Identity v3 as the admin openstacksdk's loader finds."""
    from keystoneauth1 import exceptions as ks_exceptions
    from openstack import exceptions as sdk_exceptions
    import openstack.config
    try:
        region = openstack.config.OpenStackConfig().get_one(cloud=cloud)
        session = region.get_session()
        session.get_token()
    except (sdk_exceptions.ConfigException,
            ks_exceptions.ClientException) as err:
        raise CatalogError('Cannot authenticate to Keystone: %s. Set '
                           '--os-cloud (clouds.yaml) or OS_AUTH_URL, '
                           'OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME... of '
                           'an admin.' % err) from None
    auth_url = region.config.get('auth', {}).get('auth_url')
    if not auth_url:
        raise CatalogError('The credentials name no auth_url (Keystone).')
    return Identity(session, auth_url)


def register(args, identity):
    """Make what ``wanted(args)`` lists; print one line per change."""
    for kind, name, text, urls in wanted(args):
        service_id, made = identity.service(kind, name, text)
        print('service %s (%s): %s' % (kind, service_id,
                                        'created' if made else 'exists'))
        for iface, url in urls:
            made = identity.endpoint(service_id, iface, url, args.catalog_region)
            print('  %s endpoint %s in %s: %s' % (
                iface, url, args.catalog_region, 'created' if made else 'exists'))


def _catalog(conf):
    args = conf.command
    if not args.register:
        print('# Register Tristate in Keystone as an admin (or run this with '
              '--register):')
        for line in commands(args):
            print(line)
        return 0
    try:
        register(args, _identity(args.os_cloud))
    except CatalogError as err:
        print(str(err))
        return 1
    return 0


def add_parsers(subparsers):
    parser = subparsers.add_parser(
        'catalog', help='register the compute and image APIs in a Keystone '
        'catalog (print the commands, or --register)')
    parser.add_argument('--public-url', dest='public_url', required=True,
                        metavar='URL', help='the API as clients reach it, '
                        'e.g. https://api.example.net:8774 (no path)')
    for iface in ('internal', 'admin'):
        parser.add_argument('--%s-url' % iface, dest='%s_url' % iface,
                            metavar='URL', help='the %s endpoint, if any'
                            % iface)
    parser.add_argument('--region', dest='catalog_region', default='RegionOne',
                        help='the catalog region (default RegionOne)')
    parser.add_argument('--no-image', dest='no_image', action='store_true',
                        help='skip the image API (a real Glance serves '
                        'images)')
    parser.add_argument('--register', action='store_true',
                        help='make the services and endpoints in Keystone '
                        'now, as the admin of --os-cloud or OS_*')
    parser.add_argument('--os-cloud', dest='os_cloud', metavar='NAME',
                        help='the admin\'s cloud in clouds.yaml (default: '
                        'OS_CLOUD or OS_* variables)')
    parser.set_defaults(func=_catalog)
