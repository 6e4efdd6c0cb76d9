"""What the RPC serializer puts on the bus: plain JSON values, the same as
oslo.serialization's ``to_primitive`` gives, whichever path it takes."""

import datetime
import decimal
import json
import uuid

import pytest
from oslo_serialization import jsonutils

from common import context
from common import rpc

WHEN = datetime.datetime(2026, 11, 25, 14, 37, 2, 123456)
INSTANCE = {
    'uuid': 'a3b6c1de-0f4e-4d8a-9a51-3c2b1e0d9f77', 'name': 'web-1',
    'vcpus': 2, 'memory_mb': 2048, 'power_state': 1, 'ratio': 1.5,
    'task_id': None, 'locked': False, 'created_at': WHEN,
    'policies': ['affinity'], 'progress': {'step': 'spawning', 'percent': 0},
}


@pytest.mark.parametrize('value', [
    INSTANCE,
    [INSTANCE, dict(INSTANCE, name='web-2')],
    ('a', 1, None),
    {'nested': {'deeper': [{'when': WHEN}, ('x', WHEN.date())]}},
    {7: 'an int key', None: 'a None key'},
    uuid.UUID('a3b6c1de-0f4e-4d8a-9a51-3c2b1e0d9f77'),
    decimal.Decimal('2.50'),
    b'bytes',
    frozenset({3}),
    'text', 0, -1, 2 ** 70, 0.25, True, None,
])
def test_the_serializer_gives_what_to_primitive_gives(value):
    serializer = rpc.ContextSerializer()
    ctx = context.RequestContext(user_id='u', project_id='p')
    got = serializer.serialize_entity(ctx, value)
    want = jsonutils.to_primitive(value, convert_instances=False)
    assert got == want
    assert type(got) is type(want)
    assert json.dumps(got, sort_keys=False) == json.dumps(want, sort_keys=False)


def test_datetimes_travel_as_iso_8601_strings():
    got = rpc.plain({'at': WHEN, 'list': [WHEN]})
    assert got == {'at': '2026-11-25T14:37:02.123456',
                   'list': ['2026-11-25T14:37:02.123456']}


def test_the_value_given_is_not_changed_or_shared():
    value = {'list': [1, (2, 3)], 'inner': {'a': 1}}
    got = rpc.plain(value)
    got['list'].append(4)
    got['inner']['b'] = 2
    assert value == {'list': [1, (2, 3)], 'inner': {'a': 1}}
