"""Flavors, limits, services and hypervisors as an operator reaches them
with the real ``openstack`` command line (python-openstackclient, as a
subprocess) against the embedded API over real HTTP; set up as
tests/functional/test_openstackclient.py does (its fixtures)."""

import uuid as uuidlib

from tests.functional import api_support
from tests.functional import catalogue_support as support
from tests.functional.test_openstackclient import home  # noqa: F401
from tests.functional.test_openstackclient import osc
from tests.functional.test_openstackclient import osc_fails
from tests.functional.test_openstackclient import plane  # noqa: F401
from tests.functional.test_openstackclient import url  # noqa: F401

ADMIN = 'tristate-admin'


def test_flavor_show_list_delete(home, url):  # noqa: F811
    # made and given a property with novaclient: openstackclient's flavor
    # create and set want an identity v3 service even without --project,
    # which this cloud configuration (no Keystone) has not
    name = 'osc-%s' % uuidlib.uuid4().hex[:8]
    made = support.nova(url, api_support.ADMIN_TOKEN, '2.55').flavors.create(
        name, 256, 2, 3, description='for osc')
    made.set_keys({'hw:cpu_policy': 'shared'})
    shown = osc(home, 'flavor', 'show', name)
    assert (shown['ram'], shown['vcpus'], shown['disk']) == (256, 2, 3)
    assert shown['description'] == 'for osc'
    assert shown['properties'] == {'hw:cpu_policy': 'shared'}
    assert name in [f['Name'] for f in osc(home, 'flavor', 'list')]
    refused = osc_fails(home, 'flavor', 'delete', name)
    assert 'Policy does not allow' in refused, refused
    osc(home, 'flavor', 'delete', name, cloud=ADMIN, parse=False)
    assert name not in [f['Name'] for f in osc(home, 'flavor', 'list')]


def test_limits_show(home):  # noqa: F811
    absolute = {row['Name']: row['Value']
                for row in osc(home, 'limits', 'show', '--absolute')}
    assert (absolute['max_total_instances'], absolute['total_instances_used'],
            absolute['total_ram_used']) == (-1, 0, 0)


def test_compute_services_disable_and_enable(home):  # noqa: F811
    listed = osc(home, 'compute', 'service', 'list', cloud=ADMIN)
    computes = {s['Host']: s for s in listed if s['Binary'] == 'nova-compute'}
    assert set(computes) == {'host1', 'host2'}
    osc(home, 'compute', 'service', 'set', '--disable', '--disable-reason',
        'osc test', 'host2', 'nova-compute', cloud=ADMIN, parse=False)
    listed = osc(home, 'compute', 'service', 'list', '--long', cloud=ADMIN)
    host2 = [s for s in listed if s['Host'] == 'host2'
             and s['Binary'] == 'nova-compute'][0]
    assert (host2['Status'], host2['Disabled Reason']) == ('disabled',
                                                          'osc test')
    osc(home, 'compute', 'service', 'set', '--enable', 'host2',
        'nova-compute', cloud=ADMIN, parse=False)
    listed = osc(home, 'compute', 'service', 'list', cloud=ADMIN)
    assert all(s['Status'] == 'enabled' for s in listed)


def test_hypervisor_list_and_show(home):  # noqa: F811
    listed = osc(home, 'hypervisor', 'list', cloud=ADMIN)
    names = sorted(h['Hypervisor Hostname'] for h in listed)
    assert names == ['host1', 'host2']
    shown = osc(home, 'hypervisor', 'show', 'host1', cloud=ADMIN)
    assert shown['hypervisor_hostname'] == 'host1'
    assert shown['state'] == 'up'
