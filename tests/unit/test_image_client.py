"""The Glance v2 client: the calls, the grant header, streaming, and how
errors are told apart (against tests/unit/glance_stub.py over real HTTP)."""

import hashlib
import io
import socket
import threading

import pytest

from common.images import client as client_mod
from common.images.client import GlanceClient
from tests.unit.glance_stub import GlanceStub


@pytest.fixture
def glance():
    stub = GlanceStub()
    yield stub
    stub.stop()


def test_show_and_download_stream_the_image_in_chunks(glance):
    data = bytes(range(256)) * 4096          # 1 MiB
    image_id = glance.add(data)
    client = GlanceClient(glance.url, chunk_size=65536)
    assert client.show(image_id)['os_hash_value'] == hashlib.sha512(
        data).hexdigest()
    chunks, headers = client.download(image_id)
    sizes = [len(c) for c in chunks]
    assert int(headers['Content-Length']) == len(data) == sum(sizes)
    assert len(sizes) >= 16 and max(sizes) <= 65536     # never all at once


def test_the_grant_is_sent_as_a_header_and_only_it_opens(glance):
    image_id = glance.add(b'abc')
    glance.grant = 'g1.claims.sig'
    with pytest.raises(client_mod.ImageForbidden, match='forbidden .403.'):
        GlanceClient(glance.url).show(image_id)
    assert GlanceClient(glance.url, grant='g1.claims.sig').show(
        image_id)['id'] == image_id
    assert glance.requests[-1][2]['X-Tristate-Image-Grant'] == 'g1.claims.sig'


def test_404_401_403_and_other_errors_are_told_apart(glance):
    image_id = glance.add(b'abc')
    client = GlanceClient(glance.url)
    with pytest.raises(client_mod.ImageNotFound, match='No image found'):
        client.show('0' * 36)
    glance.token = 'secret'
    with pytest.raises(client_mod.ImageForbidden,
                       match='unauthenticated .401'):
        client.show(image_id)
    glance.token = None
    glance.fail[('GET', '/v2/images/%s' % image_id)] = 503
    with pytest.raises(client_mod.ImageServiceError) as exc:
        client.show(image_id)
    assert '503' in str(exc.value) and 'injected' in str(exc.value)


def test_an_unreachable_service_is_an_image_service_error():
    with socket.socket() as sock:           # a port nobody listens on
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    client = GlanceClient('http://127.0.0.1:%d' % port, timeout=2)
    with pytest.raises(client_mod.ImageServiceError, match='None'):
        client.show('x')


def test_a_broken_download_raises_from_the_iterator(glance):
    image_id = glance.add(b'x' * 300000)
    glance.cut_after = 1000
    chunks, _headers = GlanceClient(glance.url).download(image_id)
    with pytest.raises(client_mod.ImageServiceError, match='transfer broken'):
        b''.join(chunks)


def test_a_stalled_download_times_out(glance):
    image_id = glance.add(b'abc')
    glance.hold = threading.Event()          # never set: the server stalls
    with pytest.raises(client_mod.ImageServiceError):
        GlanceClient(glance.url, timeout=0.3).download(image_id)
    glance.hold.set()


@pytest.mark.parametrize('sized', [False, True])
def test_upload_streams_a_file_chunked_or_sized(glance, sized):
    meta = GlanceClient(glance.url).create(name='snap', disk_format='raw',
                                           container_format='bare')
    assert meta['status'] == 'queued'
    data = b'snapshot' * 100000
    client = GlanceClient(glance.url, chunk_size=4096)
    client.upload(meta['id'], io.BytesIO(data),
                  size=len(data) if sized else None)
    headers = glance.requests[-1][2]
    if sized:
        assert headers['Content-Length'] == str(len(data))
    else:
        assert headers['Transfer-Encoding'] == 'chunked'
    shown = client.show(meta['id'])
    assert (shown['status'], shown['size']) == ('active', len(data))


def test_upload_of_an_iterator(glance):
    image_id = GlanceClient(glance.url).create(disk_format='raw')['id']
    GlanceClient(glance.url).upload(image_id, iter([b'ab', b'cd']))
    assert glance.images[image_id]['data'] == b'abcd'


def test_update_delete_and_list_follow_glance(glance):
    client = GlanceClient(glance.url)
    ids = sorted(glance.add(b'%d' % i) for i in range(5))
    client.update(ids[0], [{'op': 'replace', 'path': '/name',
                            'value': 'renamed'}])
    assert client.show(ids[0])['name'] == 'renamed'
    assert glance.requests[-2][2]['Content-Type'] == client_mod.PATCH_TYPE
    assert [m['id'] for m in client.list(limit=2)] == ids   # 3 pages
    assert glance.count('GET', '/v2/images') == 3
    assert [m['id'] for m in client.list(name='renamed')] == [ids[0]]
    client.delete(ids[0])
    with pytest.raises(client_mod.ImageNotFound):
        client.delete(ids[0])


def test_keystone_session_only_with_auth_type(tmp_path):
    """A Glance behind Keystone: keystoneauth's options in [image]."""
    from oslo_config import cfg

    from common import conf as tconf
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate', default_config_files=[])
    assert client_mod.session_from_conf(conf) is None
    path = tmp_path / 'agent.conf'
    path.write_text('[image]\nauth_type = password\n'
                    'auth_url = http://keystone.example/v3\n'
                    'username = agent\npassword = pw\ninsecure = true\n')
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate', default_config_files=[str(path)])
    session = client_mod.session_from_conf(conf)
    assert session.verify is False
    assert session.auth.auth_url == 'http://keystone.example/v3'


def test_through_a_keystoneauth_session_the_token_is_sent(glance):
    from keystoneauth1 import session as ks_session
    from keystoneauth1 import token_endpoint
    image_id = glance.add(b'x' * 200000)
    glance.token = 'secret'
    session = ks_session.Session(auth=token_endpoint.Token(glance.url,
                                                          'secret'))
    client = GlanceClient(glance.url, session=session)
    assert client.show(image_id)['id'] == image_id
    chunks, _headers = client.download(image_id)
    assert b''.join(chunks) == b'x' * 200000
    with pytest.raises(client_mod.ImageNotFound):
        client.show('missing')
    wrong = GlanceClient(glance.url, session=ks_session.Session(
        auth=token_endpoint.Token(glance.url, 'wrong')))
    with pytest.raises(client_mod.ImageForbidden, match='401'):
        wrong.show(image_id)
