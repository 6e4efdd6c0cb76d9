"""Nova's quota keys besides instances/cores/ram, through novaclient: set
per project at the microversions Nova takes them (the network and
security-group ones until 2.35, the injected-file ones until 2.56; refused
after, as Nova) and shown back as set. ``metadata_items`` is enforced per
server from the project's value; the others limit things Tristate does not
have. A limit below what the project uses is Nova's 400 unless ``force``.
"""

from novaclient import exceptions as nova_exc
import pytest

from tests.functional import api_support
from tests.functional import client_support
from tests.functional import test_server_features_clients as features
from tests.images_support import IMAGE

LEGACY = {'fixed_ips': 10, 'floating_ips': 20, 'security_groups': 21,
          'security_group_rules': 22, 'injected_files': 11,
          'injected_file_content_bytes': 20480,
          'injected_file_path_bytes': 512}
ALWAYS = {'metadata_items': 256, 'key_pairs': 200, 'server_groups': 20,
          'server_group_members': 21, 'instances': 20, 'cores': 8,
          'ram': 10240}


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


def _admin(url, version):
    return client_support.nova(url, api_support.ADMIN_TOKEN, version)


def test_every_nova_key_is_kept_and_shown(url):
    project = api_support.new_project().split(':')[-1]
    admin = _admin(url, '2.1')
    updated = admin.quotas.update(project, force=True, **ALWAYS, **LEGACY)
    for key, value in dict(ALWAYS, **LEGACY).items():
        assert getattr(updated, key) == value, key
    shown = admin.quotas.get(project)
    assert (shown.fixed_ips, shown.injected_files, shown.key_pairs) == (
        10, 11, 200)
    # later microversions do not show the keys Nova dropped
    assert not hasattr(_admin(url, '2.57').quotas.get(project),
                       'injected_files')


@pytest.mark.parametrize('version, key', [
    ('2.36', 'fixed_ips'), ('2.36', 'security_groups'),
    ('2.57', 'injected_files'), ('2.57', 'floating_ips')])
def test_keys_nova_dropped_are_refused_after(url, version, key):
    project = api_support.new_project().split(':')[-1]
    # (novaclient itself no longer sends them at these versions)
    with pytest.raises(nova_exc.BadRequest, match=key):
        _admin(url, version).client.put('/os-quota-sets/%s' % project,
                                        json={'quota_set': {key: 5}})


def test_metadata_items_of_the_project_are_enforced(url):
    token = api_support.new_project()
    project = token.split(':')[-1]
    _admin(url, '2.1').quotas.update(project, metadata_items=1)
    nova = client_support.nova(url, token, '2.1')
    with pytest.raises(nova_exc.Forbidden, match='metadata_items'):
        nova.servers.create('meta', IMAGE, 'tiny', meta={'a': '1', 'b': '2'})
    server = features._boot(nova, 'meta', meta={'a': '1'})
    with pytest.raises(nova_exc.Forbidden, match='metadata_items'):
        nova.servers.set_meta(server, {'b': '2'})
    assert nova.servers.get(server.id).metadata == {'a': '1'}


def test_a_limit_below_usage_needs_force(url):
    token = api_support.new_project()
    project = token.split(':')[-1]
    nova = client_support.nova(url, token, '2.1')
    features._boot(nova, 'one')
    admin = _admin(url, '2.1')
    with pytest.raises(nova_exc.BadRequest,
                       match='already used and reserved 1'):
        admin.quotas.update(project, instances=0)
    assert admin.quotas.update(project, instances=0, force=True
                               ).instances == 0


def test_delete_puts_the_defaults_back(url):
    project = api_support.new_project().split(':')[-1]
    admin = _admin(url, '2.1')
    defaults = admin.quotas.defaults(project)
    admin.quotas.update(project, instances=3, key_pairs=7, fixed_ips=9)
    admin.quotas.delete(project)
    shown = admin.quotas.get(project)
    for key in ('instances', 'key_pairs', 'fixed_ips'):
        assert getattr(shown, key) == getattr(defaults, key), key
