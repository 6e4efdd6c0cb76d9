"""Wires the API tier together: conductor client (with database access),
WSGI application and HTTP server. Used by ``tristate-api`` and, for its
embedded plane, by ``tristate-all``."""

import logging

from oslo_config import cfg

from api import server as server_mod
from api import wsgi
from conductor import rpcapi

LOG = logging.getLogger(__name__)


def make_client(conf, bus, statedb):
    """The conductor client of the API tier: it has ``statedb``, so its
    hard delete is a database UPDATE made here (works with the bus down)."""
    return rpcapi.ConductorAPI(bus, conf, statedb=statedb,
                               timeout=conf.api.rpc_timeout, bounded=True)


def serve(conf, client, *, host=None, port=None):
    """Start serving ``client`` over HTTP; returns the running server."""
    app = wsgi.create_app(conf, client)
    return server_mod.ApiServer(
        app, host=conf.api.listen if host is None else host,
        port=conf.api.port if port is None else port,
        threads=conf.api.threads,
        limits=server_mod.Limits.from_conf(conf)).start()


def _unset(conf, name, group):
    """Whether no config file (nor code) chose ``[group] name``."""
    found = conf.get_location(name, group)
    return found is None or found.location is cfg.Locations.opt_default


def serve_embedded(conf, plane, *, port):
    """The API of ``tristate-all``'s plane on 127.0.0.1. Its authentication
    is ``[api] auth_strategy`` when a config file sets it (keystone then
    checks every token, as ``tristate-api`` does); otherwise noauth, with an
    admin as the user of requests that send no token (unless the config
    files chose another ``noauth_default_user``). Unless the config files
    set ``[image] service_url`` (or ``api_endpoint``), the plane's agents
    are told to fetch images from this API's ``/image``."""
    if _unset(conf, 'auth_strategy', 'api'):
        conf.set_override('auth_strategy', 'noauth', group='api')
    if (conf.api.auth_strategy == 'noauth'
            and not conf.api.noauth_default_user):
        conf.set_override('noauth_default_user', 'admin', group='api')
    LOG.info('Embedded API authentication: %s', conf.api.auth_strategy)
    client = make_client(conf, plane.bus, plane.statedb)
    server = serve(conf, client, host='127.0.0.1', port=port)
    if _unset(conf, 'service_url', 'image') and not conf.image.api_endpoint:
        # the plane's agents fetch images from this API's image service
        conf.set_override('service_url', server.url + '/image', group='image')
    return server
