"""Real OpenStack clients against the embedded API over real HTTP (cheroot
on 127.0.0.1, a free port): python-novaclient and openstacksdk, in this
process, with keystoneauth's token-endpoint plugin sending noauth's
``USER:PROJECT`` token (no Keystone)."""

import contextlib

from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from novaclient import client as nova_client
import openstack

from api import service as api_service
from tests.functional import api_support


@contextlib.contextmanager
def serving(plane, **api_opts):
    """The API of ``plane`` on a free port; yields its base URL."""
    conf = api_support.configure(plane.conf, **api_opts)
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    try:
        yield server.url
    finally:
        server.stop()


def _session(url, token):
    return ks_session.Session(auth=token_endpoint.Token(
        endpoint=url + '/v2.1', token=token))


def nova(url, token, version='2.1'):
    """A novaclient ``Client`` at ``version``."""
    return nova_client.Client(version, session=_session(url, token))


def sdk(url, token, version=None, image=False):
    """An openstacksdk ``Connection``; ``version``: its compute
    microversion (default: the highest both sides know); ``image``: with
    the image API of ``url`` too."""
    extra = {'image_endpoint_override': url + '/image'} if image else {}
    conn = openstack.connection.Connection(
        session=_session(url, token), compute_endpoint_override=url + '/v2.1',
        compute_api_version='2', **extra)
    if version:
        conn.compute.default_microversion = version
    return conn
