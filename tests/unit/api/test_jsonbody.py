"""api/jsonbody.py: what a body may hold, and the field a 400 names."""

import json

import pytest

from api import jsonbody
from common import exception

DEPTH = jsonbody.MAX_DEPTH


def _refused(text):
    with pytest.raises(exception.Invalid) as err:
        jsonbody.loads(text.encode('utf-8', 'surrogatepass'))
    assert err.value.code == 400
    return err.value.message


def test_a_plain_body_is_decoded():
    body = {'server': {'name': 'caf\u00e9 \U0001f600', 'n': [1, -2, 3.5],
                       'tab\tkey': 'line\nbreak'}}
    assert jsonbody.loads(json.dumps(body).encode()) == body


@pytest.mark.parametrize('depth', [DEPTH + 1, 500, 5000, 100000])
def test_too_deep_names_the_same_field_below_and_above_the_parser_limit(
        depth):
    text = '{"server": {"metadata": %s}}' % ('[' * depth + ']' * depth)
    message = _refused(text)
    path = '.'.join(['server', 'metadata'] + ['0'] * (DEPTH - 2))
    assert 'field/attribute %s. ' % path in message
    assert 'nested more than %d levels deep' % DEPTH in message


def test_just_deep_enough_is_accepted():
    depth = DEPTH - 1
    body = jsonbody.loads(('{"a": %s}' % ('[' * depth + ']' * depth))
                          .encode())
    assert 'a' in body


def test_the_scan_skips_brackets_in_strings_and_counts_list_items():
    deep = '[' * 100000 + ']' * 100000
    text = '{"s": "[[[{{", "x\\"[": 1, "l": [0, "]", %s]}' % deep
    message = _refused(text)
    assert 'field/attribute l.2' in message


@pytest.mark.parametrize('text, field', [
    ('{"a": %s}' % ('9' * 101), 'a'),
    ('{"a": [1, -%s]}' % ('1' * 5000), 'a.1'),
    ('{"a": {"b": NaN}}', 'a.b'),
    ('{"a": -Infinity}', 'a'),
])
def test_numbers_python_should_not_convert_are_refused(text, field):
    assert 'field/attribute %s. ' % field in _refused(text)


def test_a_hundred_digits_are_accepted():
    assert jsonbody.loads(('[%s]' % ('9' * 100)).encode()) == [10 ** 100 - 1]


@pytest.mark.parametrize('text, field', [
    ('{"name": "a\\ud800"}', 'name'),
    ('{"name": "\\udfff"}', 'name'),
    ('{"a": ["x", "\\u0000"]}', 'a.1'),
    ('{"k\\ud800": 1}', 'k\\ud800'),
])
def test_lone_surrogates_and_nul_are_refused_in_values_and_keys(text, field):
    message = _refused(text)
    assert 'field/attribute %s. ' % field in message


def test_a_surrogate_pair_is_one_valid_character():
    assert jsonbody.loads(b'{"a": "\\ud83d\\ude00"}') == {'a': '\U0001f600'}


@pytest.mark.parametrize('data', [b'\xff\xfe{}', b'{"a": "\xed\xa0\x80"}',
                                  b'{"a": ', b'{"a": 1} x'])
def test_bytes_that_are_not_utf8_json_are_refused(data):
    with pytest.raises(exception.Invalid) as err:
        jsonbody.loads(data)
    assert 'Malformed request body' in err.value.message


@pytest.mark.parametrize('value', ['a\x00', '\x1b[2K', 'x\n', '\x85',
                                   '\ud800'])
def test_a_path_parameter_with_a_control_character_is_refused(value):
    with pytest.raises(exception.Invalid) as err:
        jsonbody.check_path({'server_id': value})
    assert 'path parameter server_id' in err.value.message


def test_a_printable_path_parameter_passes():
    jsonbody.check_path({'server_id': 'caf\u00e9-1', 'n': 3})
    jsonbody.check_path(None)
