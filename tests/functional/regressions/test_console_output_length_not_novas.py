"""``os-getConsoleOutput`` cut ``length`` lines differently from Nova.

Nova answers the last ``length`` pieces of the log split at newlines
(``ComputeManager._tail_log``): a log ending in a newline has an empty
last piece, which counts. Tristate dropped that piece first and gave one
line more, so Tempest's ``test_get_console_output`` (``length=3``, three
pieces expected) got four. Found by the Tempest run of issue 22.

Fixed: ``api.routes.consoles._output`` cuts as Nova does; the ``tristate``
command's ``--lines N`` asks for one more and prints N whole lines.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


def test_length_counts_the_piece_after_the_last_newline(app):
    api = Api(app, token=api_support.new_project())
    server = api.active()
    api.act(server['id'], {'reboot': {'type': 'SOFT'}})
    resp = api.post('/servers/%s/action' % server['id'],
                    {'os-getConsoleOutput': {'length': 3}}, version='2.1')
    assert resp.status_code == 200, resp.get_json()
    pieces = resp.get_json()['output'].split('\n')
    assert len(pieces) == 3 and pieces[-1] == '', pieces
    assert pieces[-2] == 'BOOT-OK %s' % server['id']
    api.delete('/servers/%s' % server['id'])
