"""The command line's paging of lists and its quota limits, on a fake
API client (no server): pages followed by their ``marker``, a project
spanning pages added up, an API that ignores ``marker`` stopped."""

import pytest

from api.cli import accounting
from api.cli import client as client_mod
from common.db import quotas


def test_the_cli_knows_every_quota_limit():
    assert accounting.LIMITS == quotas.LIMITS


class FakeUsageApi:
    """Pages of ``os-simple-tenant-usage``, by the marker asked for."""

    def __init__(self, pages, *, ignore_marker=False):
        self.pages, self.ignore_marker, self.asked = pages, ignore_marker, []

    def get(self, path, **params):
        self.asked.append(params.get('marker'))
        index = 0 if self.ignore_marker else len(
            [m for m in self.asked if m is not None])
        usages, marker = self.pages[index]
        body = {'tenant_usages': usages}
        if marker:
            body['tenant_usages_links'] = [{
                'rel': 'next', 'href': 'http://x/v2.1/os-simple-tenant-usage'
                '?detailed=1&marker=%s' % marker}]
        return body


def _usage(project, hours, servers):
    return {'tenant_id': project, 'total_hours': hours,
            'total_vcpus_usage': hours, 'total_memory_mb_usage': 0,
            'total_local_gb_usage': 0,
            'server_usages': [{'instance_id': s} for s in servers]}


def test_usage_pages_are_followed_and_added_up():
    api = FakeUsageApi([([_usage('a', 1, ['s1']), _usage('b', 2, ['s2'])],
                         's2'),
                        ([_usage('b', 3, ['s3'])], None)])
    found = {u['tenant_id']: u for u in accounting.usage_pages(api, {})}
    assert api.asked == [None, 's2']
    assert found['b']['total_hours'] == 5
    assert [s['instance_id'] for s in found['b']['server_usages']] == [
        's2', 's3']


def test_an_api_that_ignores_the_marker_is_not_asked_forever():
    api = FakeUsageApi([([_usage('a', 1, ['s1'])], 's1')],
                       ignore_marker=True)
    with pytest.raises(client_mod.ApiError, match='ignores "marker"'):
        accounting.usage_pages(api, {})
    assert len(api.asked) == 2


def test_next_marker_reads_the_next_link():
    links = [{'rel': 'self', 'href': 'http://x/?marker=no'},
             {'rel': 'next', 'href': 'http://x/servers?limit=2&marker=m%2B1'}]
    assert client_mod.next_marker(links) == 'm+1'
    assert client_mod.next_marker(None) is None


class FakeServersApi(client_mod.ApiClient):
    """``/servers/detail`` in pages of two, filtered by ``name`` as the API
    does (an RE2 search); no server has the id asked for."""

    def __init__(self, names):      # no session: nothing is sent
        self.servers = [{'id': 'id-%d' % n, 'name': name}
                        for n, name in enumerate(names)]
        self.asked = []

    def server(self, server_id):
        raise client_mod.ApiError('not found', status=404)

    def get(self, path, **params):
        import re2
        self.asked.append(dict(params))
        pattern = re2.compile(params.get('name', ''))
        found = [s for s in self.servers if pattern.search(s['name'])]
        start = 0
        if params.get('marker'):
            start = [s['id'] for s in found].index(params['marker']) + 1
        page = found[start:start + 2]
        body = {'servers': page}
        if start + 2 < len(found):
            body['servers_links'] = [{
                'rel': 'next',
                'href': 'http://x/servers/detail?marker=%s' % page[-1]['id']}]
        return body


def test_a_server_is_found_by_name_beyond_the_first_page():
    names = ['web', 'web-1', 'a web', 'xweb', 'w.b', 'web (2)', 'web']
    api = FakeServersApi(names[:6])
    found = api.find_server('web (2)')
    assert found['id'] == 'id-5'
    api = FakeServersApi(['web-%d' % n for n in range(7)] + ['web.5'])
    assert api.find_server('web.5')['id'] == 'id-7'
    assert len(api.asked) == 1       # the filter narrowed it to one page
    api = FakeServersApi(names)
    with pytest.raises(client_mod.ApiError, match='More than one'):
        api.find_server('web')
    with pytest.raises(client_mod.ApiError, match='No server') as err:
        api.find_server('w b')
    assert err.value.status == 404


def test_the_exact_name_pattern_matches_that_name_alone():
    import re2
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.text(st.characters(blacklist_categories=('Cs',)),
                   min_size=1, max_size=40))
    def check(name):
        pattern = re2.compile(client_mod.exact_name_pattern(name))
        assert pattern.search(name)
        assert not pattern.search(name + 'x')
        assert not pattern.search('x' + name)
        if len(name) > 1:
            assert not pattern.search(name[1:])
    check()
