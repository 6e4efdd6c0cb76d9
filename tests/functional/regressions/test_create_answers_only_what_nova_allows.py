"""``POST /servers`` answered the whole server; Tempest died on it.

Nova answers an accepted create with ``202`` and ``id``, ``links``,
``OS-DCF:diskConfig``, ``security_groups`` and, when it made one,
``adminPass``: nothing else (its create schema, and Tempest's response
schema, which has ``additionalProperties: false``). Tristate answered with
the whole server body (status, flavor, ``tristate:*`` keys, ...), so
Tempest 47's ``tempest.api.compute`` failed about 184 tests on their first
server create. Found by running Tempest against the embedded plane (issue
22). Fixed: the create answers ``id``, ``links`` and ``OS-DCF:diskConfig``
(and ``adminPass`` since issue 24 delivers one through the config drive,
and ``security_groups`` since issue 22 has the ``default`` group: the
request's, else ``default``, as Nova) at every microversion; the task it
started is
in the ``Tristate-Task-Id`` header, and clients read the rest with
``GET /servers/{id}``.
"""

import pytest

from tests.functional import api_support
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def api(shared_plane):
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.new_project())


@pytest.mark.parametrize('version', ['2.1', '2.100', '2.101'])
def test_the_create_answers_id_links_and_disk_config(api, version):
    resp = api.post('/servers', {'server': {
        'name': 'created', 'flavorRef': 'tiny', 'imageRef': IMAGE}},
        version=version)
    assert resp.status_code == 202
    created = resp.get_json()['server']
    assert set(created) == {'id', 'links', 'OS-DCF:diskConfig', 'adminPass',
                            'security_groups'}
    assert created['security_groups'] == [{'name': 'default'}]
    assert resp.headers['Location'] == created['links'][0]['href']
    assert api.settled(created['id'])['status'] == 'ACTIVE'
