"""What the catalogue tests share: the embedded API over real HTTP, a
python-novaclient for any token and microversion, and Tempest's response
schemas as an oracle (the schema Tempest's own client would check a body
with, at the microversion asked); and the fixtures the catalogue test
modules share (import them into the module: ``from
tests.functional.catalogue_support import url  # noqa: F401``).
"""

import jsonschema
import pytest
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from novaclient import client as nova_client
from tempest.lib.common import jsonschema_validator
from tempest.lib.services.compute import base_compute_client

from api import service as api_service
from tests.functional import api_support
from tests.functional.api_support import Api


def serve(plane):
    """The plane's API on a free port of 127.0.0.1 (stop() it after)."""
    conf = api_support.configure(plane.conf)
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    return api_service.serve(conf, client, host='127.0.0.1', port=0)


def nova(url, token, version='2.1'):
    """A novaclient speaking ``version`` as the noauth user ``token``."""
    auth = token_endpoint.Token(url + '/v2.1', token)
    return nova_client.Client(version, session=ks_session.Session(auth=auth))


def tempest_schema(client_class, name, version):
    """Tempest's schema ``name`` of ``client_class`` at ``version``."""
    previous = base_compute_client.COMPUTE_MICROVERSION
    base_compute_client.COMPUTE_MICROVERSION = version
    try:
        module = base_compute_client.BaseComputeClient.get_schema(
            None, client_class.schema_versions_info)
    finally:
        base_compute_client.COMPUTE_MICROVERSION = previous
    return getattr(module, name)


def check(schema, resp):
    """Assert ``resp`` (werkzeug's) is what Tempest's ``schema`` expects."""
    expected = schema['status_code']
    expected = expected if isinstance(expected, list) else [expected]
    assert resp.status_code in expected, (resp.status_code, resp.get_data())
    body_schema = schema.get('response_body')
    if body_schema:
        jsonschema.validate(
            resp.get_json(), body_schema,
            cls=jsonschema_validator.JSONSCHEMA_VALIDATOR,
            format_checker=jsonschema_validator.FORMAT_CHECKER)
    else:
        assert not resp.get_data(), resp.get_data()


# --- the fixtures the catalogue tests share ---------------------------------------

@pytest.fixture(scope='module')
def plane(shared_plane):
    return shared_plane


@pytest.fixture(scope='module')
def url(plane):
    server = serve(plane)
    yield server.url
    server.stop()


@pytest.fixture
def member_token():
    return api_support.new_project()


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture
def admin_api(app):
    return Api(app, token=api_support.ADMIN_TOKEN)
