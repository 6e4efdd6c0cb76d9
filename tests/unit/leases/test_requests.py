"""What a lease request means (conductor/leases/requests.py): dates with
'now' and time zones, durations, reservations, and 400s naming the field."""

import datetime

import pytest

from common import exception
from conductor.leases import requests

NOW = datetime.datetime(2026, 1, 1, 12, 0, 30)
HOUR = datetime.timedelta(hours=1)


def _body(**extra):
    return dict({'name': 'l', 'start_date': '2026-01-01 13:00',
                 'end_date': '2026-01-01T14:00:00Z',
                 'reservations': [{'resource_type': 'physical:host',
                                   'min': '1', 'max': 2}]}, **extra)


@pytest.mark.parametrize('text,value', [
    ('now', NOW),
    ('2026-01-01 13:00', datetime.datetime(2026, 1, 1, 13, 0)),
    ('2026-01-01T13:00:05', datetime.datetime(2026, 1, 1, 13, 0, 5)),
    ('2026-01-01T13:00:00Z', datetime.datetime(2026, 1, 1, 13, 0)),
    ('2026-01-01T15:00:00+02:00', datetime.datetime(2026, 1, 1, 13, 0)),
])
def test_dates(text, value):
    assert requests.parse_date('start_date', text, NOW) == value


def test_a_bad_date_names_the_field():
    with pytest.raises(exception.Invalid) as err:
        requests.parse_date('end_date', 'tomorrow', NOW)
    assert err.value.message.startswith(
        "Invalid input for field/attribute end_date. Value: 'tomorrow'")


@pytest.mark.parametrize('text,seconds', [('30m', 1800), ('2h', 7200),
                                          ('1d', 86400), ('45s', 45)])
def test_durations(text, seconds):
    assert requests.parse_duration('prolong_for', text).total_seconds() == (
        seconds)


def test_create_defaults():
    spec = requests.parse_create(_body(), now=NOW, before_end_minutes=90)
    assert (spec['start'], spec['end']) == (datetime.datetime(2026, 1, 1, 13),
                                            datetime.datetime(2026, 1, 1, 14))
    # 90 minutes before the end is before the start: the start
    assert spec['before_end'] == spec['start']
    assert spec['on_end'] == 'delete'
    assert spec['reservations'] == [{
        'resource_type': 'physical:host', 'min_hosts': 1, 'max_hosts': 2,
        'hypervisor_properties': ''}]
    assert requests.parse_create(_body(), now=NOW, before_end_minutes=0)[
        'before_end'] is None


@pytest.mark.parametrize('extra,field', [
    ({'start_date': '2026-01-01 11:00'}, 'start_date'),
    ({'end_date': '2026-01-01 13:00'}, 'end_date'),
    ({'before_end_date': '2026-01-01 15:00'}, 'before_end_date'),
    ({'reservations': [{'resource_type': 'virtual:instance'}]},
     'reservations.0.resource_type'),
    ({'reservations': [{'resource_type': 'physical:host', 'min': 0}]},
     'reservations.0.min'),
    ({'reservations': [{'resource_type': 'physical:host', 'min': 2,
                        'max': 1}]}, 'reservations.0.max'),
    ({'reservations': [{'resource_type': 'physical:host',
                        'resource_properties': '["==", "$gpu", "1"]'}]},
     'reservations.0.resource_properties'),
    ({'reservations': [{'resource_type': 'physical:host',
                        'hypervisor_properties': '[">", "$ram", 1]'}]},
     'reservations.0.hypervisor_properties'),
])
def test_create_errors_name_the_field(extra, field):
    with pytest.raises(exception.Invalid) as err:
        requests.parse_create(_body(**extra), now=NOW, before_end_minutes=60)
    assert err.value.message.startswith(
        'Invalid input for field/attribute %s. Value: ' % field)


def _lease(start_status='UNDONE', end_status='UNDONE'):
    start = datetime.datetime(2026, 1, 1, 13)
    return {'id': 'L1', 'start_date': start, 'end_date': start + HOUR,
            'before_end_date': start + HOUR / 2,
            'events': [{'event_type': 'start_lease', 'status': start_status},
                       {'event_type': 'end_lease', 'status': end_status}]}


def test_update_values():
    values, recheck = requests.parse_update(
        _lease(), {'prolong_for': '1h', 'name': 'n'}, now=NOW,
        before_end_minutes=60)
    assert recheck
    assert values == {'name': 'n', 'start_date': _lease()['start_date'],
                      'end_date': _lease()['end_date'] + HOUR,
                      'before_end_date': _lease()['end_date']}
    assert requests.parse_update(_lease(), {'on_end': 'stop'}, now=NOW,
                                 before_end_minutes=60) == (
        {'on_end': 'stop'}, False)


@pytest.mark.parametrize('events,body,words', [
    (('DONE', 'UNDONE'), {'start_date': 'now'},
     'start_date cannot change once the lease has started'),
    (('DONE', 'DONE'), {'reduce_by': '10m'},
     'end_date cannot change once the lease has ended'),
])
def test_updates_the_status_forbids(events, body, words):
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        requests.parse_update(_lease(*events), body, now=NOW,
                              before_end_minutes=60)
    assert err.value.code == 409 and words in err.value.message
