"""Bad input, generated: every body the schemas refuse is a 400 that names
what was wrong and changes nothing; no request at all, however malformed
its path, body or microversion, gets a 5xx.

Bodies are made by hypothesis from a valid body of each endpoint: the whole
body replaced, one field replaced by any JSON value (huge strings, deep
nesting, wrong types), a required field dropped, an unknown one added.
"""

import json

from hypothesis import HealthCheck
from hypothesis import assume
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from api import actions as api_actions
from api import schemas
from common import exception
from common.states import vm
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.conftest import wait_idle
from tests.images_support import IMAGE

MAX_BODY = 114688
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

VALID_ACTION_BODIES = {
    'reboot': {'type': 'SOFT'},
    'rescue': {'rescue_image_ref': IMAGE},
    'rebuild': {'imageRef': IMAGE},
    'resize': {'flavorRef': 'small'},
    'createImage': {'name': 'img', 'metadata': {}},
    'createBackup': {'name': 'b', 'backup_type': 'daily', 'rotation': 1},
    'changePassword': {'adminPass': 'secret'},
    'os-migrateLive': {'host': None, 'block_migration': 'auto'},
    'os-resetState': {'state': 'error'},
}
VALID_CREATE = {'server': {'name': 'fuzz', 'flavorRef': 'tiny',
                           'imageRef': IMAGE}}
# What a rejected request must leave as it was.
_KEPT = ('vm_state', 'task_state', 'task_id', 'name', 'flavor_name',
         'image_ref', 'power_state', 'host', 'updated_at')

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                           allow_infinity=False)
    | st.text(max_size=40) | st.just('x' * 70000),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12)


@st.composite
def mutated(draw, valid):
    """``valid`` with one thing wrong (or a value of any shape)."""
    how = draw(st.sampled_from(['replace', 'field', 'drop', 'extra']))
    if how == 'replace' or not isinstance(valid, dict) or not valid:
        return draw(json_values)
    body = json.loads(json.dumps(valid))
    inner = body
    # Descend into the one-key wrapper ({"server": {...}}) half the time.
    if len(body) == 1 and isinstance(next(iter(body.values())), dict) and (
            draw(st.booleans())):
        inner = next(iter(body.values()))
    key = draw(st.sampled_from(sorted(inner)))
    if how == 'field':
        inner[key] = draw(json_values)
    elif how == 'drop':
        del inner[key]
    else:
        inner[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
    return body


def _refused_by_schema(schema, body):
    try:
        schemas.validate(schema, body)
    except exception.Invalid:
        return True
    return False


def _refused_code(payload):
    """400, or 413 for a body past [api] max_request_body_size (its
    default: the fuzzing draws strings of 70,000 characters)."""
    size = len(json.dumps(payload).encode())
    return 413 if size > MAX_BODY else 400


def _fault(response):
    """The Nova fault of a 4xx: one key, a message and the code (or the
    Blazar error of the reservation API: code, message and name)."""
    assert 400 <= response.status_code < 500, (response.status_code,
                                               response.get_data()[:500])
    body = response.get_json()
    if 'error_message' in body:
        assert set(body) == {'error_code', 'error_message', 'error_name'}
        body = {'fault': {'code': body['error_code'],
                          'message': body['error_message']}}
    (fault,) = body.values()
    assert fault['code'] == response.status_code
    assert fault['message']
    return fault['message']


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture(scope='module')
def owner(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture(scope='module')
def target(owner, shared_plane):
    created = owner.post('/servers', json=VALID_CREATE)
    assert created.status_code == 202, created.get_json()
    uuid = created.get_json()['server']['id']
    assert wait_idle(shared_plane, uuid)['vm_state'] == vm.ACTIVE
    return uuid


def _kept(plane, uuid):
    inst = plane.statedb.get_instance(uuid)
    return {key: inst[key] for key in _KEPT}


def _count(plane, project):
    return len(plane.statedb.list_instances(project_id=project))


@FUZZ
@given(action=st.sampled_from(sorted(api_actions.ACTIONS)), data=st.data())
def test_a_refused_action_body_is_400_and_changes_nothing(
        owner, target, shared_plane, action, data):
    spec = api_actions.ACTIONS[action]
    valid = VALID_ACTION_BODIES.get(action)
    body = data.draw(mutated(valid if valid is not None else {}))
    assume(_refused_by_schema(spec.schema, body))
    before = _kept(shared_plane, target)
    payload = {action: body}
    response = owner.post('/servers/%s/action' % target, json=payload)
    assert response.status_code == _refused_code(payload), (
        action, body, response.get_json())
    assert _fault(response)
    assert _kept(shared_plane, target) == before


@FUZZ
@given(data=st.data())
def test_a_refused_create_body_is_400_and_creates_nothing(owner, shared_plane,
                                                          data):
    body = data.draw(mutated(VALID_CREATE))
    assume(_refused_by_schema(schemas.CREATE_SERVER, body))
    project = owner.token.split(':')[1]
    before = _count(shared_plane, project)
    response = owner.post('/servers', json=body)
    assert response.status_code == _refused_code(body), (
        body, response.get_json())
    assert _fault(response)
    assert _count(shared_plane, project) == before


@FUZZ
@given(action=st.text(min_size=1, max_size=30), body=json_values)
def test_an_unknown_action_is_400_naming_it(owner, target, action, body):
    assume(action not in api_actions.ACTIONS)
    payload = {action: body}
    response = owner.post('/servers/%s/action' % target, json=payload)
    assert response.status_code == _refused_code(payload)
    assert _fault(response)


PATHS = ['/servers', '/servers/detail', '/servers/{id}',
         '/servers/{id}/action', '/servers/{id}/os-instance-actions',
         '/servers/{id}/metadata', '/servers/{id}/metadata/{key}',
         '/flavors', '/flavors/{id}', '/os-hypervisors/detail', '/leases',
         '/leases/{id}', '/os-hosts', '/os-hosts/{id}',
         '/reservation/v1/leases', '/reservation/v1/leases/{id}',
         '/reservation/v1/os-hosts', '/reservation/v1/os-hosts/{id}',
         '/images/{id}/metadata', '/images/{id}/metadata/{key}']
_ID = st.one_of(st.uuids().map(str), st.text(max_size=20).filter(
    lambda s: '/' not in s and '?' not in s and '#' not in s),
    st.just('x' * 5000), st.just('..'), st.just('%00'))


@FUZZ
@given(method=st.sampled_from(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']),
       path=st.sampled_from(PATHS), ident=_ID, key=_ID,
       body=st.one_of(st.none(), json_values),
       # A header value cannot hold CR or LF on the wire (the test client
       # refuses to send one): any other text.
       version=st.one_of(st.none(), st.text(
           st.characters(blacklist_characters='\r\n'), max_size=12),
                         st.sampled_from(['2.1', '2.100', '3.0', 'latest',
                                          '2.', '1.0', '2.99999999999'])))
def test_no_request_gets_a_5xx(app, target, method, path, ident, key, body,
                               version):
    api = Api(app, token=api_support.new_project())
    url = path.replace('{id}', ident).replace('{key}', key)
    headers = {}
    if version is not None:
        headers['OpenStack-API-Version'] = 'compute %s' % version
    response = api.request(method, url, json=body, headers=headers)
    assert response.status_code < 500, (method, url, body, version,
                                        response.get_data()[:500])
    if response.status_code >= 400:
        _fault(response)


def test_bodies_that_are_not_json_are_400(owner, target):
    for data, kind in ((b'{"server": ', 'application/json'),
                       (b'\xff\xfe', 'application/json'),
                       (b'server=1', 'application/x-www-form-urlencoded')):
        response = owner.request('POST', '/servers', data=data,
                                 headers={'Content-Type': kind})
        assert response.status_code in (400, 415), response.get_data()
        _fault(response)
