"""Leases as a Blazar user reaches them: ``openstack reservation ...``
(python-blazarclient's openstackclient plugin, run as a subprocess:
``lease create|list|show|set|delete``, ``host create|list|show|delete``)
against the embedded API over real HTTP, the reservation API at
``/reservation/v1`` of its port, on a two-host plane of fake hypervisors.

No Keystone: as in :mod:`tests.functional.test_openstackclient`, each
cloud entry sends noauth's ``USER:PROJECT`` token with keystoneauth's
``admin_token`` plugin and names the endpoint,
``reservation_endpoint_override``. ``tristate`` is a member of a project of
its own, ``tristate-admin`` the admin who keeps the reservable pool. The
lease's window starts a day ahead, so no event runs during the test: what
is checked is what the commands send and show.
"""

import datetime
import uuid as uuidlib

import pytest

from tests.functional import api_support
from tests.functional import client_support
from tests.functional import osc_support


SUFFIX = uuidlib.uuid4().hex[:8]
PROJECT = 'project-%s' % SUFFIX
TOKENS = {'tristate': 'user-%s:%s' % (SUFFIX, PROJECT),
          'tristate-admin': api_support.ADMIN_TOKEN}
LEASE = 'night-%s' % SUFFIX
DATE = '%Y-%m-%d %H:%M'
BLAZAR_DATE = '%Y-%m-%dT%H:%M:%S.%f'

CLOUD = """\
  {name}:
    auth_type: admin_token
    auth:
      endpoint: {url}/v2.1
      token: "{token}"
    region_name: RegionOne
    reservation_endpoint_override: {url}/reservation/v1
"""


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


@pytest.fixture(scope='module')
def home(tmp_path_factory, url):
    return osc_support.write_clouds(tmp_path_factory.mktemp('blazar-user'),
                                    CLOUD, url, TOKENS)


def reservation(home, *args, cloud='tristate', parse=True):
    """``openstack --os-cloud CLOUD reservation ARGS -f json``, parsed."""
    return osc_support.osc(home, 'reservation', *args, cloud=cloud,
                           parse=parse)


def fails(home, *args, cloud='tristate'):
    """The error output of a reservation command that must fail."""
    return osc_support.fails(home, 'reservation', *args, cloud=cloud)


def admin(home, *args, **kwargs):
    return reservation(home, *args, cloud='tristate-admin', **kwargs)


@pytest.fixture(scope='module')
def window():
    start = (datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
             + datetime.timedelta(days=1)).replace(second=0, microsecond=0)
    return start, start + datetime.timedelta(hours=2)


@pytest.fixture(scope='module')
def pool(home):
    """host1 in the reservable pool, put there by the admin's command."""
    host = admin(home, 'host', 'create', 'host1')
    yield host
    osc_support.run(home, ['reservation', 'host', 'delete', 'host1'],
                    'tristate-admin')


@pytest.fixture(scope='module')
def lease(home, pool, window):
    start, end = window
    return reservation(
        home, 'lease', 'create', '--start-date', start.strftime(DATE),
        '--end-date', end.strftime(DATE),
        '--reservation', 'resource_type=physical:host,min=1,max=1', LEASE)


def _blazar(date):
    return date.strftime(BLAZAR_DATE)


# --- hosts -----------------------------------------------------------------------

def test_host_create(pool):
    assert (pool['id'], pool['hypervisor_hostname'], pool['reservable']) == (
        'host1', 'host1', True)
    assert pool['vcpus'] > 0 and pool['memory_mb'] > 0


def test_host_list_show_delete(home, pool):
    admin(home, 'host', 'create', 'host2')
    listed = admin(home, 'host', 'list')
    assert sorted(h['hypervisor_hostname'] for h in listed) == [
        'host1', 'host2']
    shown = admin(home, 'host', 'show', 'host2')
    assert (shown['id'], shown['hypervisor_hostname']) == ('host2', 'host2')
    admin(home, 'host', 'delete', 'host2', parse=False)
    assert [h['hypervisor_hostname'] for h in admin(home, 'host', 'list')] == [
        'host1']
    # by name, the client looks in the list; by id, the API answers 404
    assert "Unable to find resource with name 'host2'" in fails(
        home, 'host', 'show', 'host2', cloud='tristate-admin')


def test_host_commands_are_admin_only(home, pool):
    assert 'tristate:leases:hosts:index' in fails(home, 'host', 'list')


# --- leases ----------------------------------------------------------------------

def test_lease_create(lease, window):
    start, end = window
    assert lease['name'] == LEASE
    assert lease['status'] == 'PENDING'
    assert (lease['start_date'], lease['end_date']) == (
        _blazar(start), _blazar(end))
    assert lease['project_id'] == PROJECT
    # the command line prints a lease's lists one JSON document a line
    assert '"resource_type": "physical:host"' in lease['reservations']
    assert '"tristate:hosts": [' in lease['reservations']
    for event in ('start_lease', 'before_end_lease', 'end_lease'):
        assert '"event_type": "%s"' % event in lease['events']


def test_lease_list(home, lease):
    listed = {x['id']: x for x in reservation(home, 'lease', 'list')}
    assert listed[lease['id']]['name'] == LEASE
    assert listed[lease['id']]['start_date'] == lease['start_date']
    # another project's list does not show it; the admin's does
    assert lease['id'] in [x['id'] for x in admin(home, 'lease', 'list')]


def test_lease_show_by_name_and_id(home, lease):
    for ref in (LEASE, lease['id']):
        shown = reservation(home, 'lease', 'show', ref)
        assert (shown['id'], shown['status']) == (lease['id'], 'PENDING')


def test_lease_update_end_date(home, lease, window):
    start, end = window
    later = end + datetime.timedelta(hours=1)
    out = reservation(home, 'lease', 'set', '--end-date',
                      later.strftime(DATE), lease['id'], parse=False)
    assert 'Updated lease' in out
    shown = reservation(home, 'lease', 'show', lease['id'])
    assert shown['end_date'] == _blazar(later)
    assert shown['start_date'] == lease['start_date']
    # --prolong-for: the client reads the lease and sends the new end
    reservation(home, 'lease', 'set', '--prolong-for', '30m', LEASE,
                parse=False)
    shown = reservation(home, 'lease', 'show', lease['id'])
    assert shown['end_date'] == _blazar(
        later + datetime.timedelta(minutes=30))


def test_pool_host_held_by_a_lease_cannot_leave(home, lease):
    assert 'held by 1 reservation' in fails(
        home, 'host', 'delete', 'host1', cloud='tristate-admin')


def test_what_tristate_cannot_honour_is_refused(home, pool, window):
    start, end = window
    dates = ('--start-date', start.strftime(DATE),
             '--end-date', end.strftime(DATE))
    err = fails(home, 'lease', 'create', *dates, '--reservation',
                'resource_type=virtual:instance,vcpus=1,memory_mb=512,'
                'disk_gb=1,amount=1', 'refused-%s' % SUFFIX)
    assert 'virtual:instance' in err and 'not supported' in err
    err = fails(home, 'lease', 'create', *dates, '--reservation',
                'resource_type=physical:host,min=1,max=1,'
                'resource_properties=["==", "$gpu", "1"]',
                'refused-%s' % SUFFIX)
    assert 'resource_properties' in err and 'not supported' in err
    assert 'refused-%s' % SUFFIX not in [
        x['name'] for x in reservation(home, 'lease', 'list')]


def test_changing_a_reservation_is_refused(home, lease):
    (res_id,) = [line.split('"')[3] for line in
                 lease['reservations'].splitlines()
                 if line.strip().startswith('"id"')]
    err = fails(home, 'lease', 'set', '--reservation',
                'id=%s,max=2' % res_id, lease['id'])
    assert 'reservations' in err and 'not supported' in err


def test_lease_delete(home, lease):
    reservation(home, 'lease', 'delete', LEASE, parse=False)
    assert lease['id'] not in [
        x['id'] for x in reservation(home, 'lease', 'list')]
    assert 'could not be found' in fails(home, 'lease', 'show', lease['id'])
