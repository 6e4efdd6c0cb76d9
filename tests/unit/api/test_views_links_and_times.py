"""Links and timestamps in the API's bodies: built from prefixes and
``isoformat`` (a list of a thousand servers builds thousands of them), they
are the same text as before, character for character."""

import datetime

import pytest

from api import views

UTC = datetime.UTC


@pytest.mark.parametrize('value, text', [
    (datetime.datetime(2026, 11, 27, 8, 0, 1), '2026-11-27T08:00:01Z'),
    (datetime.datetime(2026, 1, 2, 3, 4, 5, 678901), '2026-01-02T03:04:05Z'),
    (datetime.datetime(2026, 11, 27, 8, 0, 1, tzinfo=UTC),
     '2026-11-27T08:00:01Z'),
    ('2026-11-27T08:00:01.123456', '2026-11-27T08:00:01Z'),
    ('2026-11-27 08:00:01', '2026-11-27T08:00:01Z'),
    ('2026-11-27T08:00:01+00:00', '2026-11-27T08:00:01Z'),
    (None, None),
], ids=['naive', 'microseconds', 'aware', 'iso-text', 'space', 'offset',
        'none'])
def test_isotime(value, text):
    assert views.isotime(value) == text


def test_isotime_of_any_second_is_what_strftime_writes():
    start = datetime.datetime(1999, 12, 31, 23, 59, 58, 999999)
    for step in range(0, 400000, 997):
        value = start + datetime.timedelta(seconds=step * 61, microseconds=step)
        assert views.isotime(value) == value.strftime('%Y-%m-%dT%H:%M:%SZ')


@pytest.mark.parametrize('base', ['http://api:8774', 'http://api:8774/',
                                  'https://h/compute/', ''])
def test_links_are_joined_as_before(base):
    root = base.rstrip('/')
    links = views.Links(base)
    assert links.href() == root + '/v2.1'
    assert links.href('') == root + '/v2.1/'
    assert links.href('servers', 'detail') == root + '/v2.1/servers/detail'
    assert links.href('flavors', 42) == root + '/v2.1/flavors/42'
    assert links.bookmark() == root
    assert links.bookmark('images', 'x') == root + '/images/x'
    assert links.links('servers', 'u1') == [
        {'rel': 'self', 'href': root + '/v2.1/servers/u1'},
        {'rel': 'bookmark', 'href': root + '/servers/u1'}]
