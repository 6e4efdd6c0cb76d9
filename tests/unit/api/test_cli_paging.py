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
