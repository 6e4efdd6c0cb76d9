"""The Tempest harness's own logic (``tools/tempest.py``,
``tools/tempest_results.py``): how a failure's cause is read, which tests
go to CI's list, what the skips page says. The run itself is
``tests/integration/test_tempest_subset.py``."""

import importlib.util
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _load(name):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, 'tools', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tempest = _load('tempest')
tempest_results = _load('tempest_results')

SCHEMA_TRACEBACK = """Traceback (most recent call last):
  File "rest_client.py", line 1113, in validate_response
    jsonschema.validate(body, body_schema,
jsonschema.exceptions.ValidationError: Additional properties are not allowed

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "flavors_client.py", line 73, in show_flavor
tempest.lib.exceptions.InvalidHTTPResponseBody: HTTP response body is invalid
Details: server 6a1d7b0e-2c1e-4f7a-9d2b-0e5c1a2b3c4d at 127.0.0.1:40123

Failed validating 'additionalProperties' in schema['properties']['flavor']:
"""


def test_cause_is_the_last_exception_with_its_details_ids_blanked():
    assert tempest_results.cause(SCHEMA_TRACEBACK) == (
        'tempest.lib.exceptions.InvalidHTTPResponseBody: HTTP response body '
        'is invalid Details: server <uuid> at 127.0.0.1:PORT')


def test_cause_without_an_exception_line_is_the_last_line():
    assert tempest_results.cause('one\nthe end  \n\n') == 'the end'
    assert tempest_results.cause('') == '(no traceback)'


RESULTS = {
    'tempest.api.compute.servers.test_a.T.test_ok[id-1,smoke]':
        {'status': 'passed'},
    'tempest.api.compute.admin.test_b.T.test_ok[id-2]': {'status': 'passed'},
    'tempest.api.compute.images.test_c.T.test_ok[id-3]':
        {'status': 'passed'},
    'tempest.api.compute.flavors.test_d.T.test_bad[id-4]':
        {'status': 'failed', 'cause': 'X: y'},
    'setUpClass (tempest.api.compute.limits.test_e.T)':
        {'status': 'skipped', 'reason': 'Neutron is not | available'},
}


def test_ci_list_has_only_passed_tests_of_ci_areas(tmp_path, monkeypatch):
    # (every class counts as one that builds no server here)
    monkeypatch.setattr(tempest, 'CI_FAST', re.compile(''))
    path = tmp_path / 'ci.txt'
    tempest.write_ci_list(str(path), RESULTS, '47.0.0')
    regexes = [re.compile(line) for line in path.read_text().splitlines()
               if not line.startswith('#')]
    chosen = sorted(test for test in RESULTS
                    if any(regex.search(test) for regex in regexes))
    assert chosen == ['tempest.api.compute.admin.test_b.T.test_ok[id-2]',
                      'tempest.api.compute.servers.test_a.T.test_ok'
                      '[id-1,smoke]']
    # A listed test still matches without its attributes, and a longer
    # name that begins with it does not.
    assert any(r.search('tempest.api.compute.admin.test_b.T.test_ok')
               for r in regexes)
    assert not any(r.search('tempest.api.compute.admin.test_b.T.test_ok2')
                   for r in regexes)


def test_skips_page_lists_every_skip_with_its_reason(tmp_path):
    path = tmp_path / 'skips.md'
    tempest.write_skips(str(path), RESULTS, '`--regex x`', '47.0.0')
    text = path.read_text()
    assert '1 skipped, by reason:' in text
    assert '| 1 | Neutron is not \\| available |' in text
    assert ('| `setUpClass (tempest.api.compute.limits.test_e.T)` | '
            'Neutron is not \\| available |') in text


def test_summary_counts_and_groups_failures_by_cause():
    counts, causes = tempest.summarise(RESULTS)
    assert counts == {'passed': 3, 'failed': 1, 'skipped': 1}
    assert causes == {'X: y': [
        'tempest.api.compute.flavors.test_d.T.test_bad[id-4]']}


def test_a_class_that_did_not_set_up_gives_each_of_its_tests_its_result():
    listed = ['tempest.api.compute.a.T.test_1[id-1]',
              'tempest.api.compute.a.T.test_2[id-2]',
              'tempest.api.compute.b.U.test_3[id-3]',
              'tempest.api.compute.c.V.test_4[id-4]',
              'tempest.api.compute.d.W.test_5[id-5]']
    results = {
        'setUpClass (tempest.api.compute.a.T)':
            {'status': 'failed', 'cause': 'NotFound: /v2.1/os-services'},
        'setUpClass (tempest.api.compute.b.U)':
            {'status': 'skipped', 'reason': 'Neutron is required'},
        'tempest.api.compute.c.V.test_4[id-4]': {'status': 'passed'},
        'tearDownClass (tempest.api.compute.c.V)':
            {'status': 'failed', 'cause': 'ServerFault'},
    }
    expanded, fixtures = tempest.per_test(listed, results)
    assert expanded == {
        listed[0]: {'status': 'failed', 'cause': 'setUpClass failed: '
                    'NotFound: /v2.1/os-services'},
        listed[1]: {'status': 'failed', 'cause': 'setUpClass failed: '
                    'NotFound: /v2.1/os-services'},
        listed[2]: {'status': 'skipped', 'reason': 'Neutron is required'},
        listed[3]: {'status': 'passed'},
        listed[4]: {'status': 'failed', 'cause': 'not run (no result)'},
    }
    assert sorted(fixtures) == ['setUpClass (tempest.api.compute.a.T)',
                                'tearDownClass (tempest.api.compute.c.V)']


def test_ci_list_leaves_out_classes_that_build_servers_but_a_few(tmp_path):
    results = {
        'tempest.api.compute.admin.test_quotas.Q.test_get[id-1]':
            {'status': 'passed'},
        'tempest.api.compute.admin.test_servers.S.test_rebuild[id-2]':
            {'status': 'passed'},
        'tempest.api.compute.admin.test_flavors.F.test_create_server_x':
            {'status': 'passed'},
        # but the named few that build servers are in
        'tempest.api.compute.servers.test_list_server_filters.'
        'ListServerFiltersTestJSON.test_list_servers_filter_by_image[id-3]':
            {'status': 'passed'},
        'tempest.api.compute.servers.test_list_server_filters.'
        'ListServerFiltersTestJSON.test_list_servers_filtered_by_ip[id-4]':
            {'status': 'failed'}}
    path = tmp_path / 'ci.txt'
    tempest.write_ci_list(str(path), results, '47.0.0')
    listed = [line for line in path.read_text().splitlines()
              if not line.startswith('#')]
    assert listed == ['^tempest\\.api\\.compute\\.admin\\.test_quotas\\.Q'
                      '\\.test_get(\\[|$)',
                      '^tempest\\.api\\.compute\\.servers\\.test_list_server_'
                      'filters\\.ListServerFiltersTestJSON\\.test_list_servers_'
                      'filter_by_image(\\[|$)']


def test_the_tempest_plane_has_room_while_tempest_raises_the_defaults():
    """Tempest's quota-class test adds 100 to every default quota (and
    restores them after) while other classes build servers in parallel:
    with Tristate's unlimited defaults (-1) that was 99 MB of RAM for
    every project meanwhile, and a class building three servers failed in
    CI. The Tempest plane's defaults must leave room for them."""
    from oslo_config import cfg

    from common import conf as tconf
    from common import flavors
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], default_config_files=[])
    for group, values in tempest.PLANE_SECTIONS.items():
        for name, value in values.items():
            conf.set_override(name, value, group=group)
    # the flavors Tempest is given: the two smallest (tempest_conf)
    alt = sorted(flavors.parse(conf.conductor.flavors).values(),
                 key=lambda f: (f.memory_mb, f.vcpus, f.disk_gb))[1]
    need = {'instances': 3, 'cores': 3 * alt.vcpus, 'ram': 3 * alt.memory_mb}
    for resource, wanted in need.items():
        default = getattr(conf.quota, resource)
        # what the quota-class test sets: unlimited (-1) becomes 99
        assert default != -1 and default + 100 >= wanted, (resource, default)
