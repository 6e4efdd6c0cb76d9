"""The image API (Glance v2 subset) over real HTTP: the embedded plane's
API server (cheroot on 127.0.0.1) serving ``/image`` beside ``/v2.1``.

Covers who sees which image (private 404 to others, public seen, shared
through members), uploads (checksums, an upload cut halfway or left idle
leaves no active image, a qcow2 with a backing file is refused, memory
stays flat for a large streamed upload, the compute API's body limits do
not apply), downloads, pagination, PATCH, delete and protection, agents'
grants, Nova's image proxy, and ``[image] api_endpoint``.
"""

import hashlib
import os
import socket
import subprocess
import threading
import time
import uuid as uuidlib

import pytest
import requests

from api import server as server_mod
from api import service as api_service
from common.db import images as images_db
from common.images import grants
from tests.functional import api_support
from tests.functional.conftest import set_opts

PATCH_TYPE = 'application/openstack-images-v2.1-json-patch'
OCTETS = {'Content-Type': 'application/octet-stream'}
IDLE = 2
VIEW_KEYS = {'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
             'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
             'virtual_size', 'min_ram', 'min_disk', 'disk_format',
             'container_format', 'created_at', 'updated_at', 'tags', 'self',
             'file', 'schema'}


@pytest.fixture(scope='module')
def server(shared_plane):
    conf = api_support.configure(shared_plane.conf)
    set_opts(conf, 'image', upload_idle_timeout=IDLE)
    # the compute API's bounds, far below what an upload takes
    set_opts(conf, 'api', max_request_body_size=4096, body_timeout=1)
    client = api_service.make_client(conf, shared_plane.bus,
                                     shared_plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    yield server
    server.stop()


class Glance:
    """Requests to ``/image`` as one project."""

    def __init__(self, server, token=None):
        self.url = server.url + '/image'
        self.token = token or api_support.new_project()
        self.project = self.token.partition(':')[2]
        self.http = requests.Session()
        if self.token != '-':
            self.http.headers['X-Auth-Token'] = self.token

    def call(self, method, path, **kwargs):
        kwargs.setdefault('timeout', 60)
        return self.http.request(method, self.url + path, **kwargs)

    def create(self, expect=201, **body):
        body.setdefault('disk_format', 'raw')
        body.setdefault('container_format', 'bare')
        resp = self.call('POST', '/v2/images', json=body)
        assert resp.status_code == expect, resp.text
        return resp.json()

    def show(self, image_id):
        resp = self.call('GET', '/v2/images/%s' % image_id)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def upload(self, image_id, data, expect=204, **kwargs):
        resp = self.call('PUT', '/v2/images/%s/file' % image_id, data=data,
                         headers=OCTETS, **kwargs)
        assert resp.status_code == expect, resp.text
        return resp

    def patch(self, image_id, ops, expect=200):
        resp = self.call('PATCH', '/v2/images/%s' % image_id, json=ops,
                         headers={'Content-Type': PATCH_TYPE})
        assert resp.status_code == expect, resp.text
        return resp.json() if expect == 200 else resp

    def ids(self, path='/v2/images', **params):
        resp = self.call('GET', path, params=params)
        assert resp.status_code == 200, resp.text
        return [i['id'] for i in resp.json()['images']]


@pytest.fixture
def glance(server):
    return Glance(server)


@pytest.fixture
def other(server):
    return Glance(server)


def _message(resp):
    return resp.json()['message'] if resp.headers['Content-Type'].startswith(
        'application/json') else resp.text


# --- versions ----------------------------------------------------------------

def test_version_discovery_needs_no_token(server):
    anonymous = Glance(server, token='-')
    root = anonymous.call('GET', '/')
    assert root.status_code == 300
    versions = root.json()['versions']
    assert versions[0]['id'] == 'v2.7' and versions[0]['status'] == 'CURRENT'
    assert versions[0]['links'][0]['href'] == server.url + '/image/v2/'
    assert anonymous.call('GET', '/v2').status_code == 200
    schema = Glance(server).call('GET', '/v2/schemas/image').json()
    assert schema['properties']['disk_format']['enum'] == [None, 'raw',
                                                           'qcow2']
    assert schema['additionalProperties'] == {'type': 'string'}


# --- records ------------------------------------------------------------------

def test_create_show_has_glance_view(glance):
    image = glance.create(name='cirros', min_disk=1, min_ram=64,
                          tags=['t'], os_distro='debian')
    assert set(image) == VIEW_KEYS | {'os_distro'}
    assert image['status'] == 'queued'
    assert image['visibility'] == 'shared'
    assert image['owner'] == glance.project
    assert image['self'] == '/v2/images/%s' % image['id']
    assert image['file'] == '/v2/images/%s/file' % image['id']
    assert image['schema'] == '/v2/schemas/image'
    assert image['created_at'].endswith('Z')
    assert glance.show(image['id']) == image


@pytest.mark.parametrize('body, code, word', [
    ({'status': 'active'}, 403, 'status'),
    ({'checksum': 'x'}, 403, 'checksum'),
    ({'self': 'x'}, 403, 'self'),
    ({'location': 'file:///etc/passwd'}, 403, 'location'),
    ({'os_glance_x': 'y'}, 403, 'os_glance_x'),
    ({'disk_format': 'vmdk'}, 400, 'disk_format'),
    ({'container_format': 'ovf'}, 400, 'container_format'),
    ({'visibility': 'everyone'}, 400, 'visibility'),
    ({'min_disk': 'big'}, 400, 'min_disk'),
    ({'min_ram': -1}, 400, 'min_ram'),
    ({'min_disk': 2 ** 31}, 400, 'min_disk'),
    ({'extra': 5}, 400, 'extra'),
    ({'id': 'not-a-uuid'}, 400, 'id'),
])
def test_bad_creates_are_refused_naming_the_field(glance, body, code, word):
    resp = glance.call('POST', '/v2/images', json=dict(
        {'disk_format': 'raw', 'container_format': 'bare'}, **body))
    assert resp.status_code == code, resp.text
    assert word in _message(resp)


@pytest.mark.parametrize('path, params', [
    ('/v2/images', {'name': 'a\x00b'}),
    ('/v2/images', {'tag': '\x1b'}),
    ('/v2/images', {'os_distro\x00': 'x'}),
    ('/v2/images', {'marker': '\x00'}),
    ('/v2/images/a%00b', {}),
    ('/v2/images/7f3a9c1e-5b2d-4e6f-8a0b-c4d2e6f8a1b3/members/a%00b', {}),
])
def test_control_characters_in_paths_and_queries_are_400(glance, path,
                                                        params):
    resp = glance.call('GET', path, params=params,
                       headers={'Accept': 'application/json'})
    assert resp.status_code == 400, resp.text
    assert 'printable text' in resp.json()['message']


def test_json_bodies_keep_the_compute_apis_size_limit(glance):
    """Only image data passes [api] max_request_body_size (4 KiB here)."""
    big = {'name': 'big', 'note': 'n' * 5000}
    assert glance.call('POST', '/v2/images', json=big).status_code == 413
    chunked = glance.call('POST', '/v2/images', data=iter(
        [b'{"name": "', b'n' * 5000, b'"}']),
        headers={'Content-Type': 'application/json'})
    assert chunked.status_code == 413
    image = glance.create()['id']
    resp = glance.call('PATCH', '/v2/images/%s' % image, json=[
        {'op': 'add', 'path': '/note', 'value': 'n' * 5000}],
        headers={'Content-Type': PATCH_TYPE})
    assert resp.status_code == 413


def test_errors_have_glances_shape(glance):
    missing = str(uuidlib.uuid4())
    resp = glance.call('GET', '/v2/images/%s' % missing,
                       headers={'Accept': 'application/json'})
    assert resp.status_code == 404
    body = resp.json()
    assert body['code'] == '404 Not Found' and body['title'] == 'Not Found'
    assert missing in body['message']
    html = glance.call('GET', '/v2/images/%s' % missing)
    assert html.headers['Content-Type'].startswith('text/html')
    assert missing in html.text


def _admin_of(server, glance):
    """The same project, as an admin (noauth: the user named admin)."""
    return Glance(server, token='admin:%s' % glance.project)


def test_only_admins_make_images_public(server, glance):
    resp = glance.call('POST', '/v2/images', json={'visibility': 'public'})
    assert resp.status_code == 403
    assert 'publicize_image' in _message(resp)
    image = glance.create()['id']
    glance.patch(image, [{'op': 'replace', 'path': '/visibility',
                          'value': 'public'}], expect=403)
    assert glance.create(visibility='community')['visibility'] == 'community'
    admin = _admin_of(server, glance)
    admin.patch(image, [{'op': 'replace', 'path': '/visibility',
                         'value': 'public'}])
    assert glance.show(image)['visibility'] == 'public'


def test_private_is_invisible_to_others_public_is_seen(server, glance,
                                                      other):
    private = glance.create(visibility='private')['id']
    public = _admin_of(server, glance).create(visibility='public')['id']
    assert other.call('GET', '/v2/images/%s' % private).status_code == 404
    assert other.call('GET', '/v2/images/%s/file' % private).status_code \
        == 404
    assert other.call('DELETE', '/v2/images/%s' % private).status_code == 404
    assert other.show(public)['id'] == public
    listed = other.ids()
    assert public in listed and private not in listed
    # seen is not owned
    other.patch(public, [{'op': 'replace', 'path': '/name',
                          'value': 'mine'}], expect=403)
    assert other.call('DELETE', '/v2/images/%s' % public).status_code == 403


def test_shared_through_members(glance, other, server):
    image = glance.create()['id']
    assert other.call('GET', '/v2/images/%s' % image).status_code == 404
    resp = glance.call('POST', '/v2/images/%s/members' % image,
                       json={'member': other.project})
    assert resp.status_code == 200, resp.text
    assert resp.json()['status'] == 'pending'
    assert set(resp.json()) == {'member_id', 'image_id', 'status',
                                'created_at', 'updated_at', 'schema'}
    assert other.show(image)['id'] == image            # pending: shown
    assert image not in other.ids()                    # not listed
    assert image in other.ids(member_status='pending')
    # only the member accepts
    assert glance.call('PUT', '/v2/images/%s/members/%s' % (
        image, other.project), json={'status': 'accepted'}).status_code \
        == 403
    resp = other.call('PUT', '/v2/images/%s/members/%s' % (
        image, other.project), json={'status': 'accepted'})
    assert resp.json()['status'] == 'accepted'
    assert image in other.ids()
    members = glance.call('GET', '/v2/images/%s/members' % image).json()
    assert [m['member_id'] for m in members['members']] == [other.project]
    third = Glance(server)
    assert third.call('GET', '/v2/images/%s' % image).status_code == 404
    assert glance.call('DELETE', '/v2/images/%s/members/%s' % (
        image, other.project)).status_code == 204
    assert other.call('GET', '/v2/images/%s' % image).status_code == 404
    private = glance.create(visibility='private')['id']
    assert glance.call('POST', '/v2/images/%s/members' % private,
                       json={'member': other.project}).status_code == 403


def test_pagination_follows_next(glance):
    tag = uuidlib.uuid4().hex      # other tests' public images are seen
    made = [glance.create(name='page-%d' % i, tags=[tag])['id']
            for i in range(5)]
    seen, path = [], '/v2/images'
    params = {'limit': 2, 'sort': 'name:asc', 'tag': tag}
    while True:
        resp = glance.call('GET', path, params=params).json()
        seen += [i['id'] for i in resp['images']]
        if 'next' not in resp:
            break
        assert resp['next'].startswith('/v2/images?')
        path, params = resp['next'], None
    assert seen == made
    assert resp['first'].startswith('/v2/images?')
    assert resp['schema'] == '/v2/schemas/images'
    assert glance.call('GET', '/v2/images', params={
        'limit': 'x'}).status_code == 400
    assert glance.call('GET', '/v2/images', params={
        'sort_key': 'owner'}).status_code == 400
    assert glance.call('GET', '/v2/images', params={
        'size_min': 2 ** 64}).status_code == 400


def test_patch(glance):
    image = glance.create(name='a', color='red')['id']
    after = glance.patch(image, [
        {'op': 'replace', 'path': '/name', 'value': 'b'},
        {'op': 'add', 'path': '/shape', 'value': 'round'},
        {'op': 'remove', 'path': '/color'},
        {'op': 'add', 'path': '/tags', 'value': ['x', 'y']},
        {'op': 'replace', 'path': '/min_ram', 'value': 128},
        {'op': 'replace', 'path': '/protected', 'value': True}])
    assert (after['name'], after['shape'], after['tags'],
            after['min_ram'], after['protected']) == (
        'b', 'round', ['x', 'y'], 128, True)
    assert 'color' not in after
    for ops, code in [
            ([{'op': 'replace', 'path': '/status', 'value': 'active'}], 403),
            ([{'op': 'replace', 'path': '/os_hash_value', 'value': 'x'}],
             403),
            ([{'op': 'remove', 'path': '/name'}], 403),
            ([{'op': 'replace', 'path': '/nothing', 'value': 'x'}], 409),
            ([{'op': 'remove', 'path': '/nothing'}], 409),
            ([{'op': 'move', 'path': '/name', 'from': '/x'}], 400),
            ([{'op': 'replace', 'path': '/visibility', 'value': 'x'}], 400),
            ([{'op': 'add', 'path': '/tags/0', 'value': 'z'}], 400),
            ({'op': 'add'}, 400)]:
        glance.patch(image, ops, expect=code)
    assert glance.show(image)['name'] == 'b'        # nothing changed
    wrong = glance.call('PATCH', '/v2/images/%s' % image, json=[])
    assert wrong.status_code == 415
    assert PATCH_TYPE in wrong.headers['Accept-Patch']


def test_tags(glance):
    image = glance.create()['id']
    assert glance.call('PUT', '/v2/images/%s/tags/blue' % image
                       ).status_code == 204
    assert glance.show(image)['tags'] == ['blue']
    assert image in glance.ids(tag='blue')
    assert glance.call('DELETE', '/v2/images/%s/tags/blue' % image
                       ).status_code == 204
    assert glance.call('DELETE', '/v2/images/%s/tags/blue' % image
                       ).status_code == 404


def test_delete_and_protected(glance):
    image = glance.create(protected=True)['id']
    assert glance.call('DELETE', '/v2/images/%s' % image).status_code == 403
    glance.patch(image, [{'op': 'replace', 'path': '/protected',
                          'value': False}])
    assert glance.call('DELETE', '/v2/images/%s' % image).status_code == 204
    assert glance.call('GET', '/v2/images/%s' % image).status_code == 404
    assert image not in glance.ids()



def test_deleting_an_image_a_dead_upload_left_saving_removes_its_data(
        server, shared_plane, glance):
    """An API process died mid-upload: the image stays ``saving`` and its
    partial data sits under its id in the file store, named by no
    location. Deleting the image removes that data too."""
    image = glance.create()['id']
    images_db.begin_upload(shared_plane.statedb, image)   # then it died
    datadir = shared_plane.conf.glance_store.filesystem_store_datadir
    leftover = os.path.join(datadir, image)
    with open(leftover, 'wb') as f:
        f.write(b'half an image')
    assert glance.show(image)['status'] == 'saving'
    assert glance.call('DELETE', '/v2/images/%s' % image).status_code == 204
    assert not os.path.exists(leftover)
    assert glance.call('GET', '/v2/images/%s' % image).status_code == 404


# --- data -----------------------------------------------------------------------

def test_upload_and_download(glance):
    data = os.urandom(3 * 1024 * 1024 + 17)
    image = glance.create(name='data')['id']
    glance.upload(image, data)
    shown = glance.show(image)
    assert shown['status'] == 'active'
    assert shown['size'] == shown['virtual_size'] == len(data)
    assert shown['checksum'] == hashlib.md5(data).hexdigest()
    assert shown['os_hash_algo'] == 'sha512'
    assert shown['os_hash_value'] == hashlib.sha512(data).hexdigest()
    got = glance.call('GET', '/v2/images/%s/file' % image)
    assert got.status_code == 200
    assert got.headers['Content-MD5'] == shown['checksum']
    assert got.content == data
    # an active image takes no more data
    glance.upload(image, b'again', expect=409)
    empty = glance.create()['id']
    assert glance.call('GET', '/v2/images/%s/file' % empty).status_code \
        == 204


def test_deactivate_and_reactivate(server, glance, other):
    image = _admin_of(server, glance).create(visibility='public')['id']
    assert glance.call('POST', '/v2/images/%s/actions/deactivate'
                       % image).status_code == 403     # queued
    glance.upload(image, b'd' * 10)
    assert other.call('POST', '/v2/images/%s/actions/deactivate'
                      % image).status_code == 403      # not the owner's
    assert glance.call('POST', '/v2/images/%s/actions/deactivate'
                       % image).status_code == 204
    assert glance.show(image)['status'] == 'deactivated'
    assert other.call('GET', '/v2/images/%s/file' % image).status_code \
        == 403
    assert glance.call('POST', '/v2/images/%s/actions/reactivate'
                       % image).status_code == 204
    assert other.call('GET', '/v2/images/%s/file' % image).content \
        == b'd' * 10


def test_upload_refusals_leave_the_image_queued(glance):
    image = glance.create()['id']
    resp = glance.call('PUT', '/v2/images/%s/file' % image, data=b'x',
                       headers={'Content-Type': 'text/plain'})
    assert resp.status_code == 415
    no_format = glance.create(disk_format=None)['id']
    glance.upload(no_format, b'data', expect=400)
    assert glance.show(no_format)['status'] == 'queued'


def test_max_image_size(shared_plane, glance):
    set_opts(shared_plane.conf, 'image', max_image_size=1000)
    try:
        image = glance.create()['id']
        resp = glance.upload(image, b'z' * 1001, expect=413)
        assert 'max_image_size' in _message(resp)
        glance.upload(image, iter([b'z' * 600, b'z' * 600]), expect=413)
        assert glance.show(image)['status'] == 'queued'
        glance.upload(image, b'z' * 1000)
    finally:
        shared_plane.conf.clear_override('max_image_size', group='image')


def _qcow2(tmp_path, backing=False):
    path = tmp_path / ('over.qcow2' if backing else 'plain.qcow2')
    command = ['qemu-img', 'create', '-f', 'qcow2']
    if backing:
        base = tmp_path / 'base.raw'
        base.write_bytes(b'\0' * 1024 * 1024)
        command += ['-b', str(base), '-F', 'raw']
    subprocess.run(command + [str(path), '16M'], check=True,
                   capture_output=True)
    return path.read_bytes()


def test_qcow2_with_a_backing_file_is_refused(glance, tmp_path):
    image = glance.create(disk_format='qcow2')['id']
    resp = glance.upload(image, _qcow2(tmp_path, backing=True), expect=400)
    assert 'backing' in _message(resp)
    assert glance.show(image)['status'] == 'queued'
    # a plain qcow2 goes, with its virtual size; qcow2 declared raw does not
    glance.upload(image, _qcow2(tmp_path))
    shown = glance.show(image)
    assert (shown['status'], shown['virtual_size']) == ('active',
                                                        16 * 1024 ** 2)
    raw = glance.create(disk_format='raw')['id']
    glance.upload(raw, _qcow2(tmp_path), expect=400)
    assert glance.show(raw)['status'] == 'queued'


def _raw_put(server, glance, image_id, length, parts, *,
             request='PUT /image/v2/images/%s/file',
             content_type='application/octet-stream'):
    """Sends the request line, headers and ``parts`` by hand (each a bytes
    or a pause in seconds), then closes; the answer if any."""
    sock = socket.create_connection(('127.0.0.1', server.port), timeout=30)
    head = ('%s HTTP/1.1\r\nHost: x\r\nX-Auth-Token: %s\r\n'
            'Content-Type: %s\r\nContent-Length: %d\r\n\r\n'
            % (request % image_id, glance.token, content_type, length))
    try:
        try:
            sock.sendall(head.encode())
            for part in parts:
                if isinstance(part, bytes):
                    sock.sendall(part)
                else:
                    time.sleep(part)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass                # the server stopped reading: its answer?
        return sock.recv(65536).decode(errors='replace')
    except OSError:
        return ''
    finally:
        sock.close()


def _until_not_saving(glance, image_id):
    deadline = time.monotonic() + 15
    while glance.show(image_id)['status'] == 'saving':
        assert time.monotonic() < deadline, 'the upload never ended'
        time.sleep(0.05)
    return glance.show(image_id)


def test_upload_cut_halfway_leaves_no_active_image(server, glance):
    image = glance.create()['id']
    half = b'h' * (1024 * 1024)
    _raw_put(server, glance, image, 2 * len(half), [half])
    shown = _until_not_saving(glance, image)
    assert shown['status'] == 'queued'
    assert shown['checksum'] is None
    glance.upload(image, half * 2)          # and it can be uploaded again
    assert glance.show(image)['status'] == 'active'


def test_an_idle_upload_is_cut(server, glance):
    """Cut after [image] upload_idle_timeout without a byte, not later."""
    image = glance.create()['id']
    answers = []
    sender = threading.Thread(target=lambda: answers.append(_raw_put(
        server, glance, image, 2048, [b'x' * 1024, IDLE + 4, b'y' * 1024])))
    started = time.monotonic()
    sender.start()
    try:
        deadline = started + 10
        while glance.show(image)['status'] != 'saving':
            assert time.monotonic() < deadline, 'the upload never started'
            time.sleep(0.02)
        assert _until_not_saving(glance, image)['status'] == 'queued'
        cut_after = time.monotonic() - started
    finally:
        sender.join()
    assert IDLE <= cut_after < IDLE + 2.5, cut_after
    assert ' 204 ' not in answers[0]


def test_a_slow_upload_that_keeps_moving_passes(server, glance):
    """Slower than [api] body_timeout (1 s) and larger than [api]
    max_request_body_size (4 KiB): neither applies to image data."""
    image = glance.create()['id']
    chunk = b's' * 64 * 1024
    answer = _raw_put(server, glance, image, 4 * len(chunk),
                      [chunk, 0.5, chunk, 0.5, chunk, 0.5, chunk])
    assert ' 204 ' in answer.splitlines()[0], answer
    assert glance.show(image)['size'] == 4 * len(chunk)


def test_the_idle_bound_is_upload_idle_timeout_not_the_socket_timeout(
        shared_plane, glance):
    """Pauses longer than the server's socket timeout (cheroot's, made 0.5
    s here; 10 s by default) but within [image] upload_idle_timeout (2 s)
    do not cut an upload."""
    app = api_support.make_app(shared_plane)
    slow = server_mod.ApiServer(app, port=0, threads=2)
    slow.server.timeout = 0.5
    slow.start()
    try:
        mine = Glance(slow, token=glance.token)
        image = mine.create()['id']
        answer = _raw_put(slow, mine, image, 2048,
                          [b'a' * 1024, 1.2, b'b' * 1024])
        assert ' 204 ' in answer.splitlines()[0], answer
        assert mine.show(image)['size'] == 2048
    finally:
        slow.stop()


def test_a_slow_json_body_keeps_the_body_timeout(server, glance):
    """[api] body_timeout (1 s here) still bounds the JSON bodies."""
    body = b'{"name": "slow"}'
    answer = _raw_put(server, glance, None, len(body), [body[:5], 2.5,
                                                        body[5:]],
                      request='POST /image/v2/images%.0s',
                      content_type='application/json')
    assert answer.startswith('HTTP/1.1 408'), answer


def _rss():
    with open('/proc/self/statm') as statm:
        return int(statm.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def test_memory_stays_flat_for_a_large_streamed_upload(glance):
    total = 256 * 1024 * 1024
    piece = b'\xab' * (1024 * 1024)
    peak = [_rss()]
    before = peak[0]
    done = threading.Event()

    def sample():
        while not done.wait(0.02):
            peak[0] = max(peak[0], _rss())

    def chunks():
        for _ in range(total // len(piece)):
            yield piece
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        image = glance.create()['id']
        glance.upload(image, chunks())          # chunked, no length
    finally:
        done.set()
        sampler.join()
    assert glance.show(image)['size'] == total
    # the image is 256 MiB; the process grew by a few chunks at most
    assert peak[0] - before < 48 * 1024 * 1024, (before, peak[0])


# --- grants ------------------------------------------------------------------------

def test_grants(server, shared_plane, glance):
    key = images_db.service_key(shared_plane.statedb, 'image-grants')
    private = glance.create(visibility='private')['id']
    other_image = glance.create(visibility='private')['id']
    agent = Glance(server, token='-')

    def grant(image_id, op):
        return {'X-Tristate-Image-Grant': grants.issue(
            key, image_id=image_id, host='host1', op=op, ttl=60)}
    data = b'granted data'
    write = grant(private, 'write')
    assert agent.call('PUT', '/v2/images/%s/file' % private, data=data,
                      headers=dict(OCTETS, **write)).status_code == 204
    read = grant(private, 'read')
    assert agent.call('GET', '/v2/images/%s' % private,
                      headers=read).json()['status'] == 'active'
    assert agent.call('GET', '/v2/images/%s/file' % private,
                      headers=read).content == data
    # not another image, not another op, not the catalogue
    assert agent.call('GET', '/v2/images/%s' % other_image,
                      headers=read).status_code == 403
    assert agent.call('PUT', '/v2/images/%s/file' % other_image, data=data,
                      headers=dict(OCTETS, **read)).status_code == 403
    assert agent.call('GET', '/v2/images', headers=read).status_code == 403
    assert agent.call('DELETE', '/v2/images/%s' % private,
                      headers=read).status_code == 403
    forged = {'X-Tristate-Image-Grant': grants.issue(
        b'k' * 32, image_id=private, host='h', op='read', ttl=60)}
    assert agent.call('GET', '/v2/images/%s' % private,
                      headers=forged).status_code == 403
    # a write grant uploads only while queued
    assert agent.call('PUT', '/v2/images/%s/file' % private, data=data,
                      headers=dict(OCTETS, **write)).status_code == 409


# --- Nova's proxy, and another Glance -------------------------------------------------

def test_nova_image_proxy(server, glance):
    compute = requests.Session()
    compute.headers['X-Auth-Token'] = glance.token
    image = glance.create(name='nova-view', min_disk=2,
                          instance_uuid='abc')['id']
    glance.upload(image, b'n' * 100)
    base = server.url + '/v2.1/images'
    listed = compute.get(base).json()['images']
    assert [i['id'] for i in listed if i['id'] == image] == [image]
    assert set(listed[0]) == {'id', 'name', 'links'}
    shown = compute.get(base + '/' + image).json()['image']
    assert (shown['status'], shown['progress'], shown['minDisk'],
            shown['minRam'], shown['OS-EXT-IMG-SIZE:size']) == (
        'ACTIVE', 100, 2, 0, 100)
    assert shown['metadata'] == {'instance_uuid': 'abc'}
    assert shown['server']['id'] == 'abc'
    # Nova's ``server`` filter: the server's id or one of its links (the
    # link failed before, found by Tempest's test_list_images_filter_by_
    # server_ref)
    for ref in ('abc', server.url + '/v2.1/servers/abc',
                'http://elsewhere/servers/abc'):
        found = compute.get(base, params={'server': ref}).json()['images']
        assert [i['id'] for i in found] == [image], ref
    assert compute.get(base, params={'server': 'abd'}).json()[
        'images'] == []
    assert compute.get(base, params={'name': 'a\x00'}).status_code == 400
    detail = compute.get(base + '/detail', params={'name': 'nova-view'})
    assert [i['id'] for i in detail.json()['images']] == [image]
    late = compute.get(base, headers={'OpenStack-API-Version':
                                      'compute 2.36'})
    assert late.status_code == 404
    assert compute.delete(base + '/').status_code == 404   # a blank id
    assert compute.delete(base + '/' + image).status_code == 204
    assert compute.get(base + '/' + image).status_code == 404


def test_nova_image_metadata(server, glance, other):
    """Nova's /images/{id}/metadata (deprecated at 2.39) over the image's
    properties, as Tempest's compute image metadata tests use it."""
    compute = requests.Session()
    compute.headers['X-Auth-Token'] = glance.token
    image = glance.create(name='meta', color='red')['id']
    base = server.url + '/v2.1/images/%s/metadata' % image
    assert compute.get(base).json() == {'metadata': {'color': 'red'}}
    merged = compute.post(base, json={'metadata': {'shape': 'round'}})
    assert (merged.status_code, merged.json()) == (
        200, {'metadata': {'color': 'red', 'shape': 'round'}})
    replaced = compute.put(base, json={'metadata': {'os': 'linux'}})
    assert replaced.json() == {'metadata': {'os': 'linux'}}
    assert glance.show(image)['os'] == 'linux'
    assert 'color' not in glance.show(image)
    assert compute.get(base + '/os').json() == {'meta': {'os': 'linux'}}
    one = compute.put(base + '/arch', json={'meta': {'arch': 'x86_64'}})
    assert (one.status_code, one.json()) == (200, {'meta': {'arch': 'x86_64'}})
    assert compute.delete(base + '/arch').status_code == 204
    assert compute.get(base + '/arch').status_code == 404
    assert compute.delete(base + '/arch').status_code == 404
    # refusals change nothing
    for path, method, body, code in [
            ('/os', 'put', {'meta': {'other': 'x'}}, 400),     # URI mismatch
            ('/os', 'put', {'meta': {'os': 'a', 'b': 'c'}}, 400),
            ('', 'post', {'metadata': {'k': 1}}, 400),         # not a string
            ('', 'post', {'metadata': {'x' * 256: 'v'}}, 400),
            ('', 'post', {'metadata': {'size': 'v'}}, 403),      # read-only
            ('', 'post', {'metadata': {'location': 'v'}}, 403)]:  # reserved
        resp = getattr(compute, method)(base + path, json=body)
        assert resp.status_code == code, (path, body, resp.text)
    assert compute.get(base).json() == {'metadata': {'os': 'linux'}}
    # another project: not seen; from 2.39 the API is gone
    stranger = requests.Session()
    stranger.headers['X-Auth-Token'] = other.token
    assert stranger.get(base).status_code == 404
    assert stranger.post(base, json={'metadata': {'a': 'b'}}
                         ).status_code == 404
    late = compute.get(base, headers={'OpenStack-API-Version':
                                      'compute 2.39'})
    assert late.status_code == 404


def test_another_glance_serves_the_images(shared_plane):
    conf = shared_plane.conf
    set_opts(conf, 'image', api_endpoint='http://glance.example:9292')
    try:
        app = api_support.make_app(shared_plane)
        http = app.test_client()
        resp = http.get('/image/v2/images',
                        headers={'Accept': 'application/json'})
        assert resp.status_code == 404
        assert 'glance.example' in resp.get_json()['message']
        assert http.get('/v2.1/images').status_code == 404
    finally:
        conf.clear_override('api_endpoint', group='image')


# --- a client no one here wrote -------------------------------------------------------

def test_openstacksdk_image_calls(server, tmp_path):
    import openstack
    project = api_support.new_project()
    conn = openstack.connect(
        load_yaml_config=False, load_envvars=False, auth_type='admin_token',
        auth={'token': project, 'endpoint': server.url + '/v2.1'},
        region_name='RegionOne', identity_api_version='3',
        image_endpoint_override=server.url + '/image')
    try:
        data = os.urandom(200 * 1024)
        path = tmp_path / 'disk.raw'
        path.write_bytes(data)
        image = conn.image.create_image(
            name='sdk-image', filename=str(path), disk_format='raw',
            container_format='bare', visibility='private', wait=True,
            tags=['sdk'], properties={'os_distro': 'debian'})
        found = conn.image.find_image('sdk-image', ignore_missing=False)
        assert found.id == image.id
        assert found.status == 'active'
        assert found.hash_value == hashlib.sha512(data).hexdigest()
        assert found.os_distro == 'debian'
        # create_image's own properties (owner_specified.openstack.*)
        assert found.properties['owner_specified.openstack.object'] \
            == 'images/sdk-image'
        conn.image.update_image(image.id, name='sdk-renamed',
                                tags=['sdk', 'two'], architecture='x86_64')
        renamed = conn.image.get_image(image.id)
        assert (renamed.name, sorted(renamed.tags)) == ('sdk-renamed',
                                                        ['sdk', 'two'])
        assert renamed.architecture == 'x86_64'
        out = tmp_path / 'out.raw'
        conn.image.download_image(image.id, output=str(out))
        assert out.read_bytes() == data
        names = [i.name for i in conn.image.images(tag='sdk')]
        assert names == ['sdk-renamed']
        second = conn.image.create_image(name='sdk-empty', tags=['sdk'],
                                         disk_format='raw',
                                         container_format='bare')
        # pages of one, followed by the 'next' links
        paged = [i.id for i in conn.image.images(tag='sdk', limit=1)]
        assert paged == [second.id, image.id]
        conn.image.delete_image(image.id)
        assert conn.image.find_image(image.id) is None
    finally:
        conn.close()
