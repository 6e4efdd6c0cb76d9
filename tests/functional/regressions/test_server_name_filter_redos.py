"""A server list filtered by a catastrophic regular expression stalled the API.

``GET /servers?name=`` is a regular expression (as in Nova), searched with
Python's ``re``, which backtracks: a member who named a server ``'a'*27+'!'``
and listed with ``name=^(a+)+$`` made one request take 5.7 s, and because
``re`` holds the interpreter lock, every other user's request in the process
waited as long (another project's ``GET /servers/{id}`` went from 4 ms to
5.2 s; two more characters multiply it by four). Found by trying the API as an
attacker would (issue 20). Fixed: the filter is matched by RE2
(``api/patterns.py``, the google-re2 binding), linear in the name's length;
a pattern RE2 cannot match that way (back-references, look-around) is a 400
naming ``name``.
"""

import threading
import time

import pytest
import requests

from api import service as api_service
from tests.functional import api_support

EVIL_NAME = 'a' * 27 + '!'
EVIL_PATTERN = '^(a+)+$'
# RE2 answers in microseconds; the backtracking took seconds. Generous for a
# loaded two-core machine, far below what the old code needed.
PROMPT = 2.0


@pytest.fixture
def base(plane):
    conf = api_support.configure(plane.conf)
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    yield server.url + '/v2.1'
    server.stop()


def _create(base, token, name):
    resp = requests.post(base + '/servers', headers={'X-Auth-Token': token},
                         json={'server': {'name': name, 'flavorRef': 'tiny',
                                          'imageRef': api_support.IMAGE}},
                         timeout=30)
    assert resp.status_code == 202, resp.text
    return resp.json()['server']['id']


def test_a_catastrophic_name_filter_answers_fast_and_stalls_no_one(base):
    attacker, other = api_support.new_project(), api_support.new_project()
    _create(base, attacker, EVIL_NAME)
    others_server = _create(base, other, 'db')
    answers = {}

    def evil_listing():
        started = time.monotonic()
        resp = requests.get(base + '/servers', params={'name': EVIL_PATTERN},
                            headers={'X-Auth-Token': attacker}, timeout=60)
        answers['evil'] = (resp, time.monotonic() - started)

    thread = threading.Thread(target=evil_listing)
    thread.start()
    time.sleep(0.2)         # the listing is in flight (or already done)
    started = time.monotonic()
    resp = requests.get(base + '/servers/' + others_server,
                        headers={'X-Auth-Token': other}, timeout=60)
    others_time = time.monotonic() - started
    thread.join(timeout=120)

    assert resp.status_code == 200, resp.text
    assert others_time < PROMPT, 'another user waited %.1f s' % others_time
    evil, evil_time = answers['evil']
    assert evil.status_code == 200, evil.text
    assert evil.json()['servers'] == []      # the pattern does not match
    assert evil_time < PROMPT, 'the listing took %.1f s' % evil_time


def test_the_filter_keeps_nova_regex_semantics(plane):
    api = api_support.Api(api_support.make_app(plane),
                          api_support.new_project())
    ids = {name: api.create(name)['id'] for name in ('web-1', 'web-22', 'db')}
    assert set(api.ids(query_string={'name': 'web'})) == {
        ids['web-1'], ids['web-22']}
    assert api.ids(query_string={'name': r'^web-\d{2}$'}) == [ids['web-22']]
    assert api.ids(query_string={'name': '^(a+)+$'}) == []
    assert api.ids(query_string={'name': EVIL_NAME}) == []


@pytest.mark.parametrize('pattern', [r'(web)\1', '(?=web)', 'web[', r'\Z'])
def test_a_pattern_re2_cannot_match_is_a_400_naming_the_field(plane, pattern):
    api = api_support.Api(api_support.make_app(plane),
                          api_support.new_project())
    resp = api.get('/servers', query_string={'name': pattern})
    assert resp.status_code == 400, resp.get_json()
    message = api_support.message(resp)
    assert message.startswith('Invalid input: name must be a regular '
                              'expression'), message
    assert repr(pattern) in message
