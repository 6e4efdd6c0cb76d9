"""Pagination ``next`` links were not URL-encoded.

``GET /servers?limit=1&name=pg-\\d+`` answered a ``next`` link with a raw
``+``, which reads back as a space (page 2 was a 400: the pattern no longer
compiled the same); ``name=pg(%26all_tenants%3D1)%3F`` answered a link that
carried ``&all_tenants=1`` as a parameter of its own. Found by trying the
API as an attacker would (issue 20, item 11). Fixed: the link is built with
``urllib.parse.urlencode`` from every parameter as it was sent
(api/routes/servers.py).
"""

from urllib import parse as urlparse

import pytest

from tests.functional import api_support


@pytest.fixture(scope='module')
def api(shared_plane):
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.new_project())


def _next(page):
    (link,) = page['servers_links']
    url = urlparse.urlsplit(link['href'])
    return url.path + '?' + url.query


@pytest.mark.parametrize('pattern', [
    r'^pg-\d+$', 'pg(&all_tenants=1)?', 'pg-[0-9]+ ?', '^pg-%1$|^pg-%2$'])
def test_the_next_link_reads_back_as_sent(api, pattern):
    names = ['pg-1', 'pg-2'] if '%' not in pattern else ['pg-%1', 'pg-%2']
    made = {api.create(name=name)['id'] for name in names}
    query = urlparse.urlencode({'name': pattern, 'limit': 1})
    first = api.get('/servers?' + query)
    assert first.status_code == 200, first.get_json()
    second = api.get(_next(first.get_json()))
    assert second.status_code == 200, second.get_json()
    assert urlparse.parse_qs(urlparse.urlsplit(_next(
        first.get_json())).query)['name'] == [pattern]
    seen = {s['id'] for s in first.get_json()['servers']
            + second.get_json()['servers']}
    assert seen == made
    for uuid in made:
        api.delete('/servers/%s' % uuid)
