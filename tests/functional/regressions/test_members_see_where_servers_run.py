"""Every project saw where its servers run: host, hypervisor and host_status.

Nova shows ``OS-EXT-SRV-ATTR:host``, ``hypervisor_hostname``,
``instance_name`` and ``host_status`` to admins only (its default policies
``os_compute_api:os-extended-server-attributes`` and
``os_compute_api:servers:show:host_status``): a project must not learn the
cloud's host names, nor whether a host is down. Found by issue 22 (Nova API
conformance): openstackclient's ``server show`` as a member printed the
host; the server view put those keys in every body, for everyone.

Fixed: two oslo.policy rules, ``tristate:servers:show:extended_attributes``
and ``tristate:servers:show:host_status``, admin by default; a body for a
caller they deny leaves the keys out (show, detail, create, rename), as
Nova's does. An operator may open them in the policy file.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api

WHERE = ('OS-EXT-SRV-ATTR:host', 'OS-EXT-SRV-ATTR:hypervisor_hostname',
         'OS-EXT-SRV-ATTR:instance_name', 'host_status')


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


def test_a_member_does_not_see_where_its_server_runs(app):
    member = Api(app, token=api_support.new_project())
    created = member.create('where')
    server = member.settled(created['id'])
    detail = member.get('/servers/detail').get_json()['servers']
    renamed = member.put('/servers/%s' % server['id'],
                         {'server': {'name': 'there'}}).get_json()['server']
    for body in (created, server, detail[0], renamed):
        assert not set(WHERE) & set(body), body

    admin = Api(app, token=api_support.ADMIN_TOKEN)
    shown = admin.server(server['id'])
    assert shown['OS-EXT-SRV-ATTR:host'] in ('host1', 'host2')
    assert shown['OS-EXT-SRV-ATTR:hypervisor_hostname'] == shown[
        'OS-EXT-SRV-ATTR:host']
    assert shown['OS-EXT-SRV-ATTR:instance_name'] == (
        'instance-%s' % server['id'])
    assert shown['host_status'] == 'UP'
    (listed,) = [s for s in admin.get(
        '/servers/detail', query_string={'all_tenants': 1}
    ).get_json()['servers'] if s['id'] == server['id']]
    assert set(WHERE) <= set(listed)


def test_the_policy_file_can_show_them_to_members(make_plane, tmp_path):
    from oslo_policy import opts as policy_opts
    plane = make_plane(hosts=1)
    rules = tmp_path / 'policy.yaml'
    rules.write_text(
        '"tristate:servers:show:host_status": "rule:admin_or_owner"\n')
    for group, opts in policy_opts.list_opts():
        plane.conf.register_opts(opts, group=group)
    plane.conf.set_override('policy_file', str(rules), group='oslo_policy')
    member = Api(api_support.make_app(plane),
                 token=api_support.new_project())
    server = member.settled(member.create('open')['id'])
    assert server['host_status'] == 'UP'
    assert 'OS-EXT-SRV-ATTR:host' not in server
