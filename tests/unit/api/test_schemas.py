"""Request bodies are checked against JSON schemas; a 400 names the field."""

import pytest

from api import actions
from api import schemas
from common import exception


def _error(schema, body):
    with pytest.raises(exception.Invalid) as err:
        schemas.validate(schema, body)
    assert err.value.code == 400
    return err.value.message


def test_a_good_create_body_passes():
    body = {'server': {'name': 'web1', 'flavorRef': 'small',
                       'imageRef': 'cirros', 'networks': 'auto',
                       'metadata': {'tristate:crash': 'stop'}}}
    assert schemas.validate(schemas.CREATE_SERVER, body) is body


@pytest.mark.parametrize('server, field', [
    ({'name': 'x', 'imageRef': 'i'}, 'server.flavorRef'),
    ({'name': ' x', 'flavorRef': 'f', 'imageRef': 'i'}, 'server.name'),
    ({'name': 'x', 'flavorRef': 'f', 'imageRef': 'i', 'max_count': 0},
     'server.max_count'),
    ({'name': 'x', 'flavorRef': 'f', 'imageRef': 'i', 'tags': ['a/b']},
     'server.tags.0'),
    ({'name': 'x', 'flavorRef': 'f', 'imageRef': 'i',
      'metadata': {'': 'empty key'}}, 'server.metadata'),
    ({'name': 'x', 'flavorRef': 'f', 'imageRef': 'i', 'volume': 1},
     'server.volume'),
])
def test_the_field_is_named(server, field):
    text = _error(schemas.CREATE_SERVER, {'server': server})
    assert text.startswith('Invalid input for field/attribute %s.' % field)


def test_user_metadata_takes_any_key_of_novas_pattern():
    body = {'server': {'name': 'x', 'flavorRef': 'f', 'imageRef': 'i',
                       'metadata': {'color': 'red', 'a.b:c-d_e f': 'v' * 255,
                                    'k' * 255: ''}}}
    assert schemas.validate(schemas.CREATE_SERVER, body) is body


@pytest.mark.parametrize('metadata', [
    {'k' * 256: 'v'}, {'color': 'v' * 256}, {'color': 1},
    {'bad/key': 'v'}, {'tristate:crash': 'boom'},
])
def test_bad_user_metadata_is_refused(metadata):
    text = _error(schemas.CREATE_SERVER, {'server': {
        'name': 'x', 'flavorRef': 'f', 'imageRef': 'i',
        'metadata': metadata}})
    assert 'server.metadata' in text


def test_a_bad_policy_value_lists_the_allowed_ones():
    text = _error(schemas.set_metadata_item(),
                  {'meta': {'tristate:crash': 'boom'}})
    assert "'boom' is not one of ['restart', 'stop', 'error']" in text


@pytest.mark.parametrize('key, body', [
    ('os-stop', None), ('os-stop', {}), ('reboot', {'type': 'soft'}),
    ('rebuild', {'imageRef': 'x', 'description': None}),
    ('rescue', None), ('rescue', {'rescue_image_ref': 'r'}),
    ('resize', {'flavorRef': 2}),
    ('createBackup', {'name': 'b', 'backup_type': 'weekly',
                      'rotation': '3'}),
    ('os-migrateLive', {'host': None, 'block_migration': 'auto'}),
    ('os-resetState', {'state': 'error'}),
])
def test_action_bodies(key, body):
    schemas.validate(actions.ACTIONS[key].schema, body)


@pytest.mark.parametrize('key, body, params', [
    ('reboot', {'type': 'hard'}, ('reboot_hard', {})),
    ('reboot', {'type': 'SOFT'}, ('reboot', {})),
    ('rebuild', {'imageRef': 'http://g/images/deb'},
     ('rebuild', {'image_ref': 'deb'})),
    ('resize', {'flavorRef': 'medium'}, ('resize', {'flavor': 'medium'})),
    ('createBackup', {'name': 'b', 'backup_type': 'd', 'rotation': '3'},
     ('backup', {'image_name': 'b', 'rotation': 3, 'backup_type': 'd'})),
    ('os-migrateLive', {'host': None}, ('live_migrate', {})),
    ('os-migrateLive', {'host': 'h2'}, ('live_migrate', {'host': 'h2'})),
    ('rescue', None, ('rescue', {'password': None})),
    ('rescue', {'adminPass': 'p', 'rescue_image_ref': 'http://g/images/r'},
     ('rescue', {'password': 'p', 'password_required': True,
                 'image_ref': 'r'})),
    ('changePassword', {'adminPass': 'p'},
     ('set_password', {'password': 'p'})),
])
def test_action_parameters(key, body, params):
    assert actions.ACTIONS[key].resolve(body) == params


def test_generated_passwords_are_long_unambiguous_and_differ():
    made = {actions.generate_password(12) for _ in range(50)}
    assert len(made) == 50
    assert all(len(p) == 12 and not set(p) & set('0O1lI') and p.isalnum()
               for p in made)
    assert len(actions.generate_password(20)) == 20
