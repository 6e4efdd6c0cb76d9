"""The command line's pieces: every action command builds a body the API
accepts, the client turns API faults into their message, columns format."""

import json
import subprocess
import sys

import pytest

from api import actions as api_actions
from api import schemas
from api import server as server_mod
from api.cli import client as client_mod
from api.cli import columns
from api.cli import images
from api.cli import servers

# Arguments that make each action command's required options happy.
ARGS = {'resize': ['--flavor', 'small'], 'snapshot': ['--name', 's'],
        'backup': ['--name', 'b', '--rotation', '2'],
        'set-password': ['--password', 'pw'], 'rebuild': ['--image', 'deb'],
        'reset-state': ['--state', 'error'], 'reboot': ['--hard'],
        'rescue': ['--image', 'rescue'], 'live-migrate': ['--host', 'host2']}


def _parse(command_class, argv):
    cmd = command_class(app=None, app_args=None)
    return cmd.get_parser('tristate test').parse_args(argv)


@pytest.mark.parametrize('spec', servers.ACTIONS, ids=lambda s: s.name)
def test_every_action_command_builds_a_valid_body(spec):
    args = _parse(servers.action_command(spec),
                  ['web1'] + ARGS.get(spec.name, []))
    body = spec.body(args)
    (key,) = body
    schemas.validate(api_actions.ACTIONS[key].schema, body[key])


# The console actions answer at once (no task): `tristate console log show`
# and `tristate console url show` (api/cli/consoles.py) send them.
CONSOLE_ACTIONS = {'os-getConsoleOutput', 'os-getSerialConsole',
                   'os-getVNCConsole'}


def test_the_command_line_offers_every_api_action():
    offered = {next(iter(spec.body(_parse(servers.action_command(spec),
                                          ['x'] + ARGS.get(spec.name, [])))))
               for spec in servers.ACTIONS}
    assert offered == set(api_actions.ACTIONS) - CONSOLE_ACTIONS


def test_every_command_is_registered():
    names = set(servers.commands())
    assert {'server create', 'server list', 'server show', 'server delete',
            'server actions', 'server stop', 'server reset-state'} <= names


def _fault_app(environ, start_response):
    body = json.dumps({'conflictingRequest': {
        'code': 409, 'message': 'Cannot stop instance X: it is stopped'}})
    start_response('409 Conflict', [('Content-Type', 'application/json')])
    return [body.encode()]


def test_api_faults_become_their_message():
    server = server_mod.ApiServer(_fault_app, port=0, threads=1).start()
    try:
        client = client_mod.ApiClient(server.url)
        assert client.base == server.url + '/v2.1'
        with pytest.raises(client_mod.ApiError) as err:
            client.get('/servers')
        assert str(err.value) == ('Cannot stop instance X: it is stopped '
                                  '(HTTP 409)')
        assert err.value.status == 409
    finally:
        server.stop()


def test_an_unreachable_api_says_where_it_looked():
    client = client_mod.ApiClient('http://127.0.0.1:9/v2.1', timeout=2)
    with pytest.raises(client_mod.ApiError) as err:
        client.get('/servers')
    assert 'Cannot reach the Tristate API at http://127.0.0.1:9/v2.1' in str(
        err.value)


def test_columns():
    progress = columns.Progress({'step': 'spawning', 'percent': 40})
    assert progress.human_readable() == 'spawning 40%'
    assert columns.Progress(None).human_readable() == ''
    counts = columns.Counts({'running': 2, 'ADMIN_down': 0, 'ERROR_up': 1})
    assert counts.human_readable() == 'running=2, ERROR_up=1'
    usage = columns.Usage((3, 16))
    assert usage.human_readable() == '3/16'
    assert usage.machine_readable() == {'used': 3, 'total': 16}


def test_help_lists_the_commands():
    done = subprocess.run([sys.executable, '-m', 'api.cli'],
                          capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    for name in ('server create', 'server stop', 'host list', 'flavor list',
                 'image create', 'image list', 'image show', 'image delete'):
        assert name in done.stdout


def test_rescue_and_rename_commands():
    spec = next(s for s in servers.ACTIONS if s.name == 'rescue')
    args = _parse(servers.action_command(spec),
                  ['web1', '--password', 'pw', '--image', 'r'])
    body = spec.body(args)
    assert body == {'rescue': {'adminPass': 'pw', 'rescue_image_ref': 'r'}}
    schemas.validate(api_actions.ACTIONS['rescue'].schema, body['rescue'])
    args = _parse(servers.RenameServer, ['web1', 'web2'])
    assert (args.server, args.name) == ('web1', 'web2')
    assert servers.commands()['server rename'] is servers.RenameServer


def test_the_image_api_is_under_the_api_endpoint():
    for endpoint in ('http://h:8774', 'http://h:8774/', 'http://h:8774/v2.1'):
        assert images.image_endpoint(endpoint) == 'http://h:8774/image'


def test_server_create_needs_an_image():
    with pytest.raises(SystemExit):
        _parse(servers.CreateServer, ['web1', '--flavor', 'tiny'])
    args = _parse(servers.CreateServer, ['web1', '--flavor', 'tiny',
                                         '--image', 'debian-12'])
    assert args.image == 'debian-12'


def _images_app(seen):
    """An image API that knows no image by id and lists ``seen['list']``."""
    def app(environ, start_response):
        seen.setdefault('tokens', []).append(environ.get('HTTP_X_AUTH_TOKEN'))
        if environ['PATH_INFO'] == '/image/v2/images':
            status, body = '200 OK', {'images': seen['list']}
        else:
            status, body = '404 Not Found', {'message': 'no such image'}
        start_response(status, [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]
    return app


def test_an_image_name_must_match_exactly_one_image():
    seen = {'list': []}
    server = server_mod.ApiServer(_images_app(seen), port=0, threads=1).start()
    try:
        service = images.ImageService(images.image_endpoint(server.url),
                                      token='alice:p1', timeout=5)
        with pytest.raises(client_mod.ApiError) as err:
            service.find('deb')
        assert str(err.value) == ("No image with a name or ID of 'deb' "
                                  "exists (see `tristate image list`).")
        seen['list'] = [{'id': 'a1', 'name': 'deb'}, {'id': 'b2',
                                                      'name': 'deb'}]
        with pytest.raises(client_mod.ApiError) as err:
            service.find('deb')
        assert str(err.value) == ("More than one image is named 'deb': use "
                                  "its ID (a1, b2).")
        seen['list'] = seen['list'][:1]
        assert service.find('deb')['id'] == 'a1'
        # the command line's token goes to the image API as X-Auth-Token
        assert set(seen['tokens']) == {'alice:p1'}
    finally:
        server.stop()


def test_an_unreachable_image_api_says_where_it_looked():
    service = images.ImageService('http://127.0.0.1:9/image', timeout=2)
    with pytest.raises(client_mod.ApiError) as err:
        service.call('list')
    assert 'Cannot reach the image API at http://127.0.0.1:9/image' in str(
        err.value)
