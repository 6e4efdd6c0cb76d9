"""Microversion negotiation, as Nova does it."""

import pytest

from api import microversion
from api.microversion import APIVersion
from common import exception


def test_versions_compare_as_numbers():
    assert APIVersion(2, 10) > APIVersion(2, 9)
    assert APIVersion.parse('2.101') == microversion.PENDING
    assert str(microversion.MAX) == '2.101'
    assert microversion.MIN < microversion.EMBEDDED_FLAVOR < microversion.MAX


@pytest.mark.parametrize('headers, expected', [
    ({}, '2.1'),
    ({'OpenStack-API-Version': 'compute 2.5'}, '2.5'),
    ({'OpenStack-API-Version': 'compute LATEST'}, '2.101'),
    ({'OpenStack-API-Version': 'identity 3.1,compute 2.7'}, '2.7'),
    ({'OpenStack-API-Version': 'identity 3.1'}, '2.1'),
    ({'X-OpenStack-Nova-API-Version': '2.11'}, '2.11'),
    ({'X-OpenStack-Nova-API-Version': 'latest'}, '2.101'),
])
def test_from_headers(headers, expected):
    assert str(microversion.from_headers(headers)) == expected


@pytest.mark.parametrize('text', ['2.102', '3.0', '2.0', '1.9'])
def test_out_of_range_is_406(text):
    with pytest.raises(microversion.NotAcceptable) as err:
        microversion.from_headers({'OpenStack-API-Version': 'compute ' + text})
    assert err.value.code == 406
    assert 'Version %s is not supported' % text in err.value.message


@pytest.mark.parametrize('text', ['2', 'x.y', '2.01', '02.1', ''])
def test_malformed_is_400(text):
    with pytest.raises(exception.Invalid) as err:
        microversion.from_headers({'X-OpenStack-Nova-API-Version': text or ' '})
    assert err.value.code == 400


def test_response_headers():
    headers = microversion.response_headers(APIVersion(2, 42))
    assert headers['OpenStack-API-Version'] == 'compute 2.42'
    assert headers['X-OpenStack-Nova-API-Version'] == '2.42'
    assert headers['Vary'] == ('OpenStack-API-Version, '
                               'X-OpenStack-Nova-API-Version')
