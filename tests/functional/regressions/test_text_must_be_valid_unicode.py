"""A lone surrogate in a name answered 500; control characters were stored.

``"\\ud800"`` is valid JSON but no Unicode text: a server name, a rename, a
createImage name, a lease name or an imageRef holding one raised
``UnicodeEncodeError`` when the database driver encoded it (500; for
rebuild, a task that could not end). A NUL reached PostgreSQL, which cannot
store one in text (500 there, stored on SQLite); ESC, CR or LF in a name
were stored and shown to every other client. Found by trying the API as an
attacker would (issue 20, item 8). Fixed in one place: the JSON decoder
(api/jsonbody.py) refuses a lone surrogate or a NUL in any string of any
body, keys included, and a control character in a path parameter; names,
references, dates and hosts are one line of printable text (the schemas'
``printable`` format); other text (a password, a lease's
``hypervisor_properties`` query) is stored exactly. Run on SQLite and
PostgreSQL.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import message
from tests.images_support import IMAGE

SURROGATE = '\ud800'
NUL = '\x00'
CONTROL = ['\x1b[2K\r', '\n', '\x7f', '\x85', '\u2028']


@pytest.fixture(scope='module')
def plane(leasable_plane_on_each_database):
    return leasable_plane_on_each_database


@pytest.fixture(scope='module')
def api(plane):
    return api_support.Api(api_support.make_app(plane),
                           token=api_support.new_project())


@pytest.fixture(scope='module')
def server(api):
    return api.active(name='keep')


@pytest.fixture(scope='module')
def lease(api):
    resp = api.post('/leases', json=_lease('later'))
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()['lease']


def _lease(name='l', start='2998-01-01 00:00', end='2998-02-01 00:00',
           properties=''):
    return {'name': name, 'start_date': start, 'end_date': end,
            'reservations': [{'resource_type': 'physical:host', 'min': 1,
                              'max': 1,
                              'hypervisor_properties': properties}]}


def _create(**fields):
    return {'server': dict({'name': 'n', 'flavorRef': 'tiny',
                            'imageRef': IMAGE}, **fields)}


# (field named in the 400, method, path, body of the bad text v)
ONE_LINE = [
    ('server.name', 'POST', '/servers', lambda v: _create(name='a%sb' % v)),
    ('server.imageRef', 'POST', '/servers', lambda v: _create(imageRef=v)),
    ('server.flavorRef', 'POST', '/servers', lambda v: _create(flavorRef=v)),
    ('os:scheduler_hints.reservation_id', 'POST', '/servers',
     lambda v: dict(_create(), **{'os:scheduler_hints': {
         'reservation_id': v}})),
    ('server.name', 'PUT', '/servers/{id}',
     lambda v: {'server': {'name': 'a%sb' % v}}),
    ('createImage.name', 'POST', '/servers/{id}/action',
     lambda v: {'createImage': {'name': 'a%sb' % v}}),
    ('createBackup.backup_type', 'POST', '/servers/{id}/action',
     lambda v: {'createBackup': {'name': 'b', 'backup_type': v,
                                 'rotation': 1}}),
    ('rebuild.imageRef', 'POST', '/servers/{id}/action',
     lambda v: {'rebuild': {'imageRef': v}}),
    ('rescue.rescue_image_ref', 'POST', '/servers/{id}/action',
     lambda v: {'rescue': {'rescue_image_ref': v}}),
    ('resize.flavorRef', 'POST', '/servers/{id}/action',
     lambda v: {'resize': {'flavorRef': v}}),
    ('os-migrateLive.host', 'POST', '/servers/{id}/action',
     lambda v: {'os-migrateLive': {'host': v}}),
    ('name', 'POST', '/leases', lambda v: _lease(name='a%sb' % v)),
    ('start_date', 'POST', '/leases', lambda v: _lease(start=v)),
    ('name', 'PUT', '/leases/{lease}', lambda v: {'name': 'a%sb' % v}),
    ('prolong_for', 'PUT', '/leases/{lease}', lambda v: {'prolong_for': v}),
]
# Free text: any character but NUL and lone surrogates.
FREE = [
    ('changePassword.adminPass', 'POST', '/servers/{id}/action',
     lambda v: {'changePassword': {'adminPass': v}}),
    ('reservations.0.hypervisor_properties', 'POST', '/leases',
     lambda v: _lease(properties=v)),
    ('metadata.', 'POST', '/servers/{id}/metadata',
     lambda v: {'metadata': {v: 'x'}}),
]


def _state(api, server, lease):
    return (api.server(server['id']),
            api.get('/servers/detail').get_json()['servers'],
            api.get('/leases').get_json()['leases'])


def _send(api, server, lease, method, path, body):
    url = path.format(id=server['id'], lease=lease['id'])
    return api.request(method, url, json=body)


def _refused_naming(api, server, lease, field, method, path, body):
    """The request is a 400 naming ``field`` and changes nothing."""
    before = _state(api, server, lease)
    resp = _send(api, server, lease, method, path, body)
    assert resp.status_code == 400, (field, resp.get_json())
    assert 'field/attribute %s' % field in message(resp)
    assert _state(api, server, lease) == before


@pytest.mark.parametrize('field, method, path, body', ONE_LINE + FREE)
@pytest.mark.parametrize('bad', [SURROGATE, NUL], ids=['surrogate', 'nul'])
def test_a_surrogate_or_nul_is_400_naming_the_field(
        api, server, lease, field, method, path, body, bad):
    _refused_naming(api, server, lease, field, method, path, body(bad))


@pytest.mark.parametrize('field, method, path, body', ONE_LINE)
@pytest.mark.parametrize('bad', CONTROL)
def test_a_control_character_in_one_line_text_is_400(
        api, server, lease, field, method, path, body, bad):
    _refused_naming(api, server, lease, field, method, path, body(bad))


@pytest.mark.parametrize('ident', ['%00', 'x%1b%5b2K', '%0aforged'])
@pytest.mark.parametrize('path', ['/servers/{}', '/servers/{}/metadata',
                                  '/leases/{}', '/os-quota-sets/{}'])
def test_a_control_character_in_a_path_parameter_is_400(api, path, ident):
    resp = api.get(path.format(ident))
    assert resp.status_code == 400, resp.get_json()
    assert 'path parameter' in message(resp)


def test_text_any_database_can_hold_is_stored_exactly(api, server):
    name = 'caf\u00e9 \u6771\u4eac \U0001f600 e\u0301'
    query = '[">=",\n\t"$vcpus",\r\n "1"]'
    created = api.create(name=name)
    assert api.server(created['id'])['name'] == name
    renamed = api.put('/servers/%s' % server['id'],
                      json={'server': {'name': name + '!'}})
    assert renamed.status_code == 200, renamed.get_json()
    assert api.server(server['id'])['name'] == name + '!'
    api.put('/servers/%s' % server['id'], json={'server': {'name': 'keep'}})
    resp = api.post('/leases', json=_lease(name=name, properties=query))
    assert resp.status_code == 201, resp.get_json()
    shown = api.get('/leases/%s' % resp.get_json()['lease']['id'])
    lease = shown.get_json()['lease']
    assert lease['name'] == name
    assert lease['reservations'][0]['hypervisor_properties'] == query
    api.delete('/leases/%s' % lease['id'])
    api.delete('/servers/%s' % created['id'])
