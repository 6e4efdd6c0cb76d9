"""Consoles as a user reaches them with openstackclient (issue 24):
``openstack console log show`` and ``openstack console url show
--serial`` (a subprocess, real HTTP to the embedded API), on a plane of
fake hypervisors whose guests have serial consoles."""

import urllib.parse

import pytest

from api import service as api_service
from tests.functional import api_support
from tests.functional import osc_support
from tests.functional import test_openstackclient as osc_tests
from tests.functional.conftest import Planes
from tests.functional.conftest import new_conf
from tests.functional.conftest import set_opts

TOKENS = osc_tests.TOKENS
BASE_URL = 'ws://proxy.example:6083/'


@pytest.fixture(scope='module')
def plane(tmp_path_factory):
    conf = new_conf(tmp_path_factory.mktemp('plane'))
    set_opts(conf, 'serial_console', enabled=True, base_url=BASE_URL)
    planes = Planes(conf)
    yield planes.start(hosts=2)
    planes.stop_all()
    conf.reset()


@pytest.fixture(scope='module')
def url(plane):
    conf = api_support.configure(plane.conf)
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    yield server.url
    server.stop()


@pytest.fixture(scope='module')
def home(tmp_path_factory, url):
    home = tmp_path_factory.mktemp('osc-console')
    (home / 'clouds.yaml').write_text('clouds:\n' + ''.join(
        osc_support.CLOUD.format(name=name, url=url, token=token)
        for name, token in TOKENS.items()))
    return home


@pytest.fixture(scope='module')
def server(plane):
    api = api_support.Api(api_support.make_app(plane), TOKENS['tristate'])
    return api.active()


def _run(home, *args, cloud='tristate'):
    return osc_support.run(home, list(args), cloud)


def test_console_log_show(home, server):
    done = _run(home, 'console', 'log', 'show', server['id'])
    assert done.returncode == 0, done.stderr
    assert 'BOOT-OK %s' % server['id'] in done.stdout
    # openstackclient sends Nova's length, which counts the empty piece
    # after the final newline
    done = _run(home, 'console', 'log', 'show', '--lines', '2', server['id'])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == 'BOOT-OK %s' % server['id']


def test_console_url_show_serial(home, server):
    shown = osc_support.osc(home, 'console', 'url', 'show', '--serial',
                            server['id'])
    url = urllib.parse.urlsplit(shown['url'])
    assert shown['type'] == 'serial'
    assert '%s://%s%s' % (url.scheme, url.netloc, url.path) == BASE_URL
    assert urllib.parse.parse_qs(url.query)['token']


def test_another_projects_console_is_not_found(home, server):
    for args in (('console', 'log', 'show', server['id']),
                 ('console', 'url', 'show', '--serial', server['id'])):
        done = _run(home, *args, cloud='tristate-other')
        assert done.returncode != 0
        assert 'No Server found for %s' % server['id'] in done.stderr, \
            done.stderr


def test_novnc_is_refused_as_not_supported(home, server):
    done = _run(home, 'console', 'url', 'show', '--novnc', server['id'])
    assert done.returncode != 0
    assert 'Unavailable console type novnc' in done.stderr, done.stderr
