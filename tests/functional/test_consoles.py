"""Consoles through the REST API (issue 24), on a plane of fake hypervisors:
the console log (``os-getConsoleOutput`` with ``length`` as Nova), and the
one-time console URLs (``remote-consoles`` 2.6+, ``os-getSerialConsole``)
whose tokens the conductor keeps (what the proxy does with them:
test_console_proxy.py).

The fake driver writes a line per operation on the guest's console log
(and ``BOOT-OK <uuid>`` when it boots, as the test image does on its
serial line), under ``<state_dir>/fakevirt-consoles/``.
"""

import datetime
import os
import urllib.parse

import pytest

from common.db import consoles as tokens_db
from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional.conftest import Planes
from tests.functional.conftest import new_conf
from tests.functional.conftest import set_opts


class Clock:
    """The conductor's clock (naive UTC), moved by the test."""

    def __init__(self):
        self.now = datetime.datetime(2026, 11, 27, 2, 0, 0)

    def __call__(self):
        return self.now


@pytest.fixture(scope='module')
def clock():
    return Clock()


@pytest.fixture(scope='module')
def plane(tmp_path_factory, clock):
    conf = new_conf(tmp_path_factory.mktemp('plane'))
    set_opts(conf, 'serial_console', enabled=True, token_ttl=60,
             base_url='ws://console.example:6083/?title=x')
    planes = Planes(conf)
    yield planes.start(hosts=2, clock=clock)
    planes.stop_all()
    conf.reset()


@pytest.fixture(scope='module')
def app(plane):
    return api_support.make_app(plane)


@pytest.fixture
def api(app):
    return api_support.Api(app, api_support.new_project())


def output(api, server_id, body=None, expect=200):
    resp = api.post('/servers/%s/action' % server_id,
                    {'os-getConsoleOutput': body if body is not None
                     else {}})
    assert resp.status_code == expect, resp.get_json()
    return resp.get_json().get('output') if expect == 200 else \
        api_support.message(resp)


def log_path(plane, server_id):
    return fake.console_log(plane.conf.state_dir, server_id)


# --- the console log ---------------------------------------------------------------

def test_console_output_is_the_guests_log(api):
    server = api.active()
    text = output(api, server['id'])
    assert 'BOOT-OK %s\n' % server['id'] in text
    assert text.splitlines()[0].endswith('spawn: power RUNNING')


def test_length_is_the_last_lines(api):
    server = api.active()
    api.act(server['id'], {'reboot': {'type': 'SOFT'}})
    full = output(api, server['id'])
    lines = full.splitlines()
    assert len(lines) == 6      # spawn, kernel, boot, reboot, kernel, boot
    # as Nova's _tail_log: the empty piece after the last newline counts
    assert output(api, server['id'], {'length': 3}) == '\n'.join(
        full.split('\n')[-3:])
    assert output(api, server['id'], {'length': 3}).splitlines() == \
        lines[-2:]
    assert output(api, server['id'], {'length': '2'}).splitlines() == \
        lines[-1:]
    assert output(api, server['id'], {'length': 1}) == ''
    assert output(api, server['id'], {'length': 0}) == ''
    assert output(api, server['id'], {'length': -1}).splitlines() == lines
    assert output(api, server['id'], {'length': 100}).splitlines() == lines
    assert output(api, server['id'], {'length': None}).splitlines() == lines


@pytest.mark.parametrize('length', [-2, '-5', 'ten', 1.5, '', [1]])
def test_bad_length_is_a_400_naming_it(api, length):
    server = api.active()
    message = output(api, server['id'], {'length': length}, expect=400)
    assert 'length' in message


def test_log_is_readable_after_the_guest_stopped(api):
    server = api.active()
    api.act(server['id'], {'os-stop': None})
    text = output(api, server['id'])
    assert 'BOOT-OK %s' % server['id'] in text
    assert text.rstrip().endswith('power_off: power SHUTDOWN')


def test_log_is_deleted_with_the_instance(api, plane):
    server = api.active()
    path = log_path(plane, server['id'])
    assert os.path.exists(path)
    assert api.delete('/servers/%s' % server['id']).status_code == 204
    api_support.wait_for(lambda: not os.path.exists(path),
                         what='the console log to be removed')
    assert output(api, server['id'], expect=404)


def test_what_is_sent_is_bounded(api, plane):
    server = api.active()
    with open(log_path(plane, server['id']), 'a') as f:
        f.write('x' * 300000 + '\nlast line\n')
    text = output(api, server['id'])
    limit = plane.conf.serial_console.output_max_bytes
    assert len(text.encode()) <= limit
    assert text.endswith('x\nlast line\n')


def test_no_log_is_nova_404(api, plane):
    server = api.active()
    os.unlink(log_path(plane, server['id']))
    assert output(api, server['id'], expect=404) == \
        'Guest does not have a console available.'


def test_another_projects_console_output_is_a_404(api):
    server = api.active()
    other = api.as_(api_support.new_project())
    output(other, server['id'], expect=404)


# --- console URLs and their tokens ----------------------------------------------------

def remote(api, server_id, protocol='serial', kind='serial', expect=200,
           version='2.6'):
    resp = api.post('/servers/%s/remote-consoles' % server_id,
                    {'remote_console': {'protocol': protocol,
                                        'type': kind}}, version=version)
    assert resp.status_code == expect, resp.get_json()
    return resp.get_json()


def token_of(url):
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)[
        'token'][0]


def consume(plane, token):
    return tokens_db.consume(plane.statedb.db, token, plane.statedb.clock())


def test_remote_console_url_has_a_one_time_token(api, plane):
    server = api.active()
    body = remote(api, server['id'])['remote_console']
    assert body['protocol'] == 'serial' and body['type'] == 'serial'
    url = urllib.parse.urlsplit(body['url'])
    assert (url.scheme, url.netloc, url.path) == ('ws', 'console.example:6083',
                                                  '/')
    assert urllib.parse.parse_qs(url.query)['title'] == ['x']
    target = consume(plane, token_of(body['url']))
    assert target['instance_uuid'] == server['id']
    assert target['host'] == api.host(server['id'])
    with pytest.raises(Exception, match='already used'):
        consume(plane, token_of(body['url']))


def test_token_expires(api, plane, clock):
    server = api.active()
    url = remote(api, server['id'])['remote_console']['url']
    clock.now += datetime.timedelta(seconds=61)
    try:
        with pytest.raises(Exception, match='expired'):
            consume(plane, token_of(url))
    finally:
        clock.now -= datetime.timedelta(seconds=61)


def test_token_of_a_deleted_instance_opens_nothing(api, plane):
    server = api.active()
    url = remote(api, server['id'])['remote_console']['url']
    assert api.delete('/servers/%s' % server['id']).status_code == 204
    with pytest.raises(Exception, match='deleted'):
        consume(plane, token_of(url))


def test_serial_console_action_as_nova_2_1(api, plane):
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'],
                    {'os-getSerialConsole': {'type': 'serial'}},
                    version='2.1')
    assert resp.status_code == 200, resp.get_json()
    console = resp.get_json()['console']
    assert console['type'] == 'serial'
    assert consume(plane, token_of(console['url']))['instance_uuid'] == \
        server['id']


def test_another_projects_console_is_a_404(api):
    server = api.active()
    other = api.as_(api_support.new_project())
    remote(other, server['id'], expect=404)
    resp = other.post('/servers/%s/action' % server['id'],
                      {'os-getSerialConsole': {'type': 'serial'}})
    assert resp.status_code == 404


def test_remote_consoles_needs_2_6(api):
    server = api.active()
    remote(api, server['id'], expect=404, version='2.5')


@pytest.mark.parametrize('protocol, kind', [('vnc', 'novnc'),
                                            ('spice', 'spice-html5')])
def test_other_console_types_are_not_supported(api, protocol, kind):
    server = api.active()
    body = remote(api, server['id'], protocol, kind, expect=400)
    assert body['badRequest']['message'] == \
        'Unavailable console type %s.' % kind


@pytest.mark.parametrize('body', [
    {'remote_console': {'protocol': 'serial', 'type': 'novnc'}},
    {'remote_console': {'protocol': 'telnet', 'type': 'serial'}},
    {'remote_console': {'type': 'serial'}},
    {'console': {}}])
def test_bad_remote_console_body_is_a_400(api, body):
    server = api.active()
    resp = api.post('/servers/%s/remote-consoles' % server['id'], body)
    assert resp.status_code == 400, resp.get_json()


def test_vnc_console_action_is_not_supported(api):
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'],
                    {'os-getVNCConsole': {'type': 'novnc'}})
    assert resp.status_code == 400
    assert api_support.message(resp) == 'Unavailable console type novnc.'


# --- changePassword -------------------------------------------------------------------

def test_change_password_answers_once_the_guest_took_it(api, plane):
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'],
                    {'changePassword': {'adminPass': 's3cret'}})
    assert resp.status_code == 202, resp.get_json()
    log = api.get('/servers/%s/os-instance-actions' % server['id'])
    assert log.get_json()['instanceActions'][0]['action'] == 'changePassword'
    assert api.server(server['id'])['OS-EXT-STS:task_state'] is None


def test_change_password_without_a_guest_agent_is_nova_409(api, plane):
    server = api.active()
    store = fake.HostStore(plane.conf.state_dir, api.host(server['id']))
    # what the libvirt driver raises when no qemu-guest-agent answers
    store.set_fault('set_password', 'fail', count=1)
    resp = api.post('/servers/%s/action' % server['id'],
                    {'changePassword': {'adminPass': 's3cret'}})
    assert resp.status_code == 409, resp.get_json()
    message = resp.get_json()['conflictingRequest']['message']
    assert message.startswith('Failed to set admin password on %s because '
                              % server['id'])
    assert api.server(server['id'])['status'] == 'ACTIVE'


def test_rescue_with_a_password_and_no_guest_agent_is_nova_409(api, plane):
    """A rescue password the user gives must reach the rescue system's
    guest agent: without one the rescue is undone and the answer is the
    409 changePassword gives. A generated one is not waited for."""
    server = api.active()
    store = fake.HostStore(plane.conf.state_dir, api.host(server['id']))
    store.set_fault('set_password', 'fail', count=1)
    resp = api.post('/servers/%s/action' % server['id'],
                    {'rescue': {'adminPass': 'Resc-ue-1'}})
    assert resp.status_code == 409, resp.get_json()
    message = resp.get_json()['conflictingRequest']['message']
    assert message.startswith('Failed to set admin password on %s because '
                              % server['id'])
    assert 'Resc-ue-1' not in message
    assert api.settled(server['id'])['status'] == 'ACTIVE'
    # no fault left: the same request rescues it and answers the password
    resp = api.post('/servers/%s/action' % server['id'],
                    {'rescue': {'adminPass': 'Resc-ue-1'}})
    assert resp.status_code == 200, resp.get_json()
    assert resp.get_json() == {'adminPass': 'Resc-ue-1'}
    assert api.settled(server['id'])['status'] == 'RESCUE'


def test_rescue_with_a_generated_password_needs_no_guest_agent(api, plane):
    server = api.active()
    store = fake.HostStore(plane.conf.state_dir, api.host(server['id']))
    store.set_fault('set_password', 'fail', count=1)
    resp = api.post('/servers/%s/action' % server['id'], {'rescue': None})
    assert resp.status_code == 200, resp.get_json()
    assert api.settled(server['id'])['status'] == 'RESCUE'
    store.clear_faults()


# --- Tempest's response schemas as the oracle -----------------------------------------

def test_bodies_pass_tempests_schemas(api):
    from tempest.lib.services.compute import servers_client

    from tests.functional.test_api_response_schemas import check
    from tests.functional.test_api_response_schemas import schema_of
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'],
                    {'os-getConsoleOutput': {'length': 3}}, version='2.1')
    check(schema_of(servers_client.ServersClient, 'get_console_output',
                    '2.1'), resp)
    resp = api.post('/servers/%s/remote-consoles' % server['id'],
                    {'remote_console': {'protocol': 'serial',
                                        'type': 'serial'}}, version='2.6')
    check(schema_of(servers_client.ServersClient, 'get_remote_consoles',
                    '2.6'), resp)
