"""Tempest's compute API tests against the embedded plane (issue 22).

    tools/tempest.sh [--regex R | --include-list FILE] [--workspace DIR]
                     [--concurrency N] [--skips-doc PATH] [--summary PATH]

``tools/tempest.sh`` makes (once, cached) the Keystone and Tempest
virtualenvs (``TRISTATE_TEST_KEYSTONE``, ``TRISTATE_TEST_TEMPEST``) and runs
this script with the Tristate virtualenv's Python. It:

1. starts a real Keystone (:mod:`tests.integration.keystone_support`:
   SQLite, Fernet, bootstrapped, under gunicorn);
2. starts ``tristate-all`` (fake driver, :data:`HOSTS` hosts) with ``[api]
   auth_strategy = keystone``, and registers its compute API and its image
   API (Glance v2, as service type ``image``) in Keystone's catalog;
3. uploads two public images through that image API, makes one shared
   network (:data:`NETWORK`) and reads the flavors from the compute API;
4. ``tempest init`` a workspace and writes its ``etc/tempest.conf``
   (:func:`tempest_conf`): identity v3, Neutron, Cinder and Swift off, and
   every ``compute-feature-enabled`` flag set from what Tristate builds
   (:data:`FEATURES`, each with why);
5. ``tempest run`` (default ``--regex tempest.api.compute``), then reads
   the results from stestr's subunit stream (``tools/tempest_results.py``,
   run by the Tempest virtualenv's Python) and prints passed, failed and
   skipped; ``--skips-doc`` writes every skipped test with its reason
   (``docs/tempest-skips.md`` comes from the full run), ``--summary``
   the counts, the failures and their causes as JSON.

Exit status: 0 when no test failed, 1 when some did, 2 when the set-up
failed. Logs (Keystone's, the plane's, Tempest's) stay in the workspace.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import services  # noqa: E402
from common.images import client as image_client  # noqa: E402
from tests.integration import keystone_support  # noqa: E402

TEMPEST_ENV = 'TRISTATE_TEST_TEMPEST'
HOSTS = 2
DEFAULT_REGEX = 'tempest.api.compute'
IMAGE_DATA = b'TRISTATE-TEMPEST-IMAGE\n'.ljust(1024 * 1024, b'\0')
# Nova's maximum microversion: Tristate answers 2.1 .. 2.100 as Nova does
# (2.101 is Tristate's own, which Tempest does not know).
MAX_MICROVERSION = '2.100'

# [compute-feature-enabled]: what Tristate builds, each flag with why.
# A flag is True only for what the API serves today. (Tempest 47 has no
# compute ``api_extensions`` flag any more: its extension tests run always,
# against /extensions, which answers Nova's whole frozen list.)
FEATURES = {
    'resize': (True, 'resize, confirmResize, revertResize'),
    'cold_migration': (True, 'migrate (admin; 2.56 a host), confirm and '
                       'revert (issue 25)'),
    'live_migration': (True, 'os-migrateLive (admin)'),
    'live_migrate_back_and_forth': (True, 'os-migrateLive to the other '
                                    'host and back'),
    'block_migration_for_live_migration': (
        True, 'every live migration copies the disk (no shared storage: '
        'libvirt\'s NON_SHARED_INC); block_migration true or auto'),
    'can_migrate_between_any_hosts': (True, 'any enabled host'),
    'volume_backed_live_migration': (False, 'no volumes (Cinder off)'),
    'vnc_console': (False, 'no VNC consoles (serial only, issue 24)'),
    'spice_console': (False, 'no consoles'),
    'serial_console': (
        False, 'its one test live-migrates a guest that echoes on its serial '
        'console: the fake hypervisor has no guest to answer'),
    'console_output': (True, 'os-getConsoleOutput (issue 24)'),
    'rescue': (True, 'rescue, unrescue'),
    'stable_rescue': (False, 'no stable device rescue (2.87)'),
    'pause': (True, 'pause, unpause'),
    'shelve': (True, 'shelve, shelveOffload, unshelve (2.77 zone, 2.91 '
               'host); [compute] shelved_offload_time 0 on both sides'),
    'shelve_migrate': (True, 'an unshelved server cold-migrates as any '
                       'other'),
    'suspend': (True, 'suspend, resume'),
    'snapshot': (True, 'createImage to the image API'),
    'change_password': (True, 'changePassword'),
    'enable_instance_password': (
        True, 'create, rebuild and rescue answer adminPass (delivered in '
        'the config drive: issue 24)'),
    'interface_attach': (False, 'no os-interface: ports are made by the '
                         'create only (issue 23)'),
    'config_drive': (True, 'config_drive on create, [compute] '
                     'force_config_drive (issue 24)'),
    'personality': (False, 'no file injection'),
    'metadata_service': (False, 'no metadata service'),
    'attach_encrypted_volume': (False, 'no volumes'),
    'swap_volume': (False, 'no volumes'),
    'volume_multiattach': (False, 'no volumes'),
    'vtpm_live_migration': (False, 'no vTPM'),
    'disk_config': (True, 'OS-DCF:diskConfig AUTO and MANUAL on create, '
                    'update, rebuild and resize (api/diskhost.py)'),
    'ide_bus': (False, 'the fake driver has no disk buses'),
    'unified_limits': (False, 'quotas are Tristate\'s, not Keystone\'s'),
    'hostname_fqdn_sanitization': (
        True, 'a server\'s hostname derived from an FQDN name has its dots '
        'made dashes (common/hostnames.py)'),
}
# tristate-all's config beyond Keystone's (adminPass is answered as with
# Nova's default [api] enable_instance_password = true, so nothing for it):
# Nova's default quotas, which Tempest is written against. Tristate's are
# unlimited (-1), and Tempest's quota-class test adds 100 to each default
# while other classes build servers in parallel (it restores them after):
# from -1 that made every project's RAM quota 99 MB meanwhile, and their
# builds failed (a CI failure; Tempest's own note in that test says so).
PLANE_SECTIONS = {'quota': {'instances': 10, 'cores': 20, 'ram': 51200}}
# The areas of CI's subset (tests/integration/test_tempest_subset.py):
# ``--ci-list`` writes the tests of these that passed.
CI_AREAS = re.compile(r'^tempest\.api\.compute\.(servers|flavors|limits|'
                      r'quotas|admin)\.')
# Within those, the classes that build no server (or one, in set-up): the
# whole of CI's areas that pass took more than CI's 8 minutes on a loaded
# 2-core machine (161 tests); these (about 100) take a fraction of it.
CI_FAST = re.compile(r'\.(admin\.test_(flavors|quotas|hypervisor|services|'
                     r'hosts|simple_tenant_usage_negative)|servers\.'
                     r'test_multiple_create_negative)|'
                     r'migrate_non_existent_server')
CI_SLOW = re.compile(r'create_server|server_with')
# And two classes that build servers (four in all, in their set-up): the
# list filters of issue 22 and the newest microversion's list, show,
# update and rebuild, within seconds of CI's time; and seven multi-node
# tests of issues 25 and 22 (a cold migration confirmed, one reverted, a
# server group's affinity and anti-affinity over the two hosts, the
# same_host and different_host hints), a few seconds.
CI_SERVERS = re.compile(r'\.servers\.(test_list_server_filters\.'
                        r'ListServerFiltersTestJSON|test_servers\.'
                        r'ServersListShow2100Test)\.|'
                        r'\.admin\.test_migrations\.MigrationsAdminTest\.'
                        r'test_(revert_)?cold_migration\[|'
                        r'\.admin\.test_servers_on_multinodes\.'
                        r'ServersOnMultiNodesTest\.test_create_server(_with_'
                        r'scheduler_hint_group_|s_on_(same|different)_host)')
CI_LIST = os.path.join(ROOT, 'tools', 'tempest-ci.txt')
# Tristate's scheduler in Nova's filter names: hosts alive and enabled,
# availability zones, server groups' affinity and anti-affinity (hard and
# soft), the same_host and different_host hints (common/db/host_hints.py).
SCHEDULER_FILTERS = ['AvailabilityZoneFilter', 'ComputeFilter',
                     'ServerGroupAffinityFilter',
                     'ServerGroupAntiAffinityFilter', 'SameHostFilter',
                     'DifferentHostFilter']
# Tests that no Tempest flag skips and that assume what Tristate does not
# have, each with why: left out of the run (``--exclude-list``) and listed
# with the skips in docs/tempest-skips.md. None today: the last one,
# ServerActionsTestOtherA.test_remove_server_all_security_groups, runs since
# Tristate has its one security group (``default``) and servers in none
# (common/secgroups.py).
EXCLUDED = {}


def _require_tempest():
    venv = os.environ.get(TEMPEST_ENV)
    if not venv or not os.access(os.path.join(venv, 'bin', 'tempest'),
                                 os.X_OK):
        raise SystemExit('%s must name a virtualenv with tempest '
                         '(tools/tempest.sh makes one)' % TEMPEST_ENV)
    return venv


def upload_images(plane, token):
    """Two public raw images through the plane's image API, as an
    admin (``token``); their ids."""
    glance = image_client.GlanceClient(plane.url + '/image', token=token)
    ids = []
    for name in ('tempest-image', 'tempest-image-alt'):
        image = glance.create(name=name, visibility='public',
                              disk_format='raw', container_format='bare')
        glance.upload(image['id'], iter([IMAGE_DATA]), size=len(IMAGE_DATA))
        ids.append(glance.show(image['id'])['id'])
    return ids


# The plane's one network, shared by every project (as nova-network's
# default was): servers built with no ``networks`` get a port on it, and
# the legacy ``os-networks`` list (below 2.36) shows it.
NETWORK = {'name': 'tempest-net', 'cidr': '10.99.0.0/16',
           'bridge': 'br-tempest'}


def make_network(plane, token):
    """:data:`NETWORK` through the compute API (2.101, as an admin)."""
    answer = requests.post(
        plane.url + '/v2.1/os-networks', json={'network': NETWORK},
        headers={'X-Auth-Token': token,
                 'OpenStack-API-Version': 'compute 2.101'},
        timeout=60)
    answer.raise_for_status()


def tempest_conf(keystone, images, flavors, workspace):
    """The sections of ``etc/tempest.conf``."""
    features = {name: str(on).lower()
                for name, (on, _) in FEATURES.items()}
    features['scheduler_enabled_filters'] = ','.join(SCHEDULER_FILTERS)
    return {
        'DEFAULT': {'log_dir': os.path.join(workspace, 'logs'),
                    'log_file': 'tempest.log'},
        'oslo_concurrency': {'lock_path': os.path.join(workspace, 'locks')},
        'auth': {'use_dynamic_credentials': 'true',
                 'create_isolated_networks': 'false',
                 'admin_username': keystone_support.ADMIN,
                 'admin_password': keystone.passwords[keystone_support.ADMIN],
                 'admin_project_name': keystone_support.ADMIN,
                 'admin_domain_name': keystone_support.DOMAIN},
        'identity': {'uri_v3': keystone.auth_url, 'auth_version': 'v3',
                     'region': keystone_support.REGION,
                     'v3_endpoint_type': 'public'},
        'identity-feature-enabled': {'api_v3': 'true'},
        'service_available': {'nova': 'true', 'glance': 'true',
                              'neutron': 'false', 'cinder': 'false',
                              'swift': 'false'},
        'compute': {'image_ref': images[0], 'image_ref_alt': images[1],
                    'flavor_ref': flavors[0]['id'],
                    'flavor_ref_alt': flavors[1]['id'],
                    'min_compute_nodes': str(HOSTS),
                    'min_microversion': '2.1',
                    'max_microversion': MAX_MICROVERSION,
                    'region': keystone_support.REGION,
                    'build_timeout': '120', 'build_interval': '1'},
        'compute-feature-enabled': features,
        'image': {'region': keystone_support.REGION,
                  'disk_formats': 'raw,qcow2', 'container_formats': 'bare',
                  'build_timeout': '120', 'build_interval': '1'},
        'validation': {'run_validation': 'false'},
    }


def _run(argv, cwd, log):
    with open(log, 'ab') as out:
        return subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                              stdout=out, stderr=subprocess.STDOUT,
                              check=False).returncode


def init_workspace(tempest_venv, workspace, sections):
    # The registry of workspaces (~/.tempest/workspace.yaml by default) is
    # one of our own beside the workspace, made anew with it.
    registry = workspace + '.workspaces.yaml'
    for path in (workspace, registry):
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    tempest = os.path.join(tempest_venv, 'bin', 'tempest')
    os.makedirs(os.path.dirname(workspace), exist_ok=True)
    status = subprocess.run(
        [tempest, 'init', '--workspace-path', registry, workspace],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        check=False)
    if status.returncode != 0:
        raise SystemExit('tempest init failed: %s%s' % (status.stdout,
                                                         status.stderr))
    os.makedirs(os.path.join(workspace, 'logs'), exist_ok=True)
    with open(os.path.join(workspace, 'etc', 'tempest.conf'), 'w') as out:
        out.write(services.ini(sections))


def run_tempest(tempest_venv, workspace, args):
    """``tempest run`` in ``workspace``; its output goes to run.log."""
    argv = [os.path.join(tempest_venv, 'bin', 'tempest'), 'run',
            '--concurrency', str(args.concurrency)] + _selection(args)
    print('== %s' % ' '.join(argv[1:]), flush=True)
    began = time.monotonic()
    _run(argv, workspace, os.path.join(workspace, 'run.log'))
    return time.monotonic() - began


def read_results(tempest_venv, workspace):
    """{test id: {status, reason, cause}} from stestr's last run."""
    stream = os.path.join(workspace, 'last.subunit')
    with open(stream, 'wb') as out:
        subprocess.run([os.path.join(tempest_venv, 'bin', 'stestr'), 'last',
                        '--subunit'], cwd=workspace, stdout=out,
                       stdin=subprocess.DEVNULL, check=False)
    parsed = subprocess.run(
        [os.path.join(tempest_venv, 'bin', 'python'),
         os.path.join(ROOT, 'tools', 'tempest_results.py'), stream],
        capture_output=True, text=True, check=True)
    return json.loads(parsed.stdout)


def _selection(args):
    """The tests to run: the selection, less :data:`EXCLUDED`."""
    excluded = os.path.join(os.path.abspath(args.workspace), 'excluded.txt')
    os.makedirs(os.path.dirname(excluded), exist_ok=True)
    with open(excluded, 'w') as out:
        out.write(''.join('^%s(\\[|$)\n' % re.escape(test)
                          for test in sorted(EXCLUDED)))
    chosen = (['--include-list', os.path.abspath(args.include_list)]
              if args.include_list else ['--regex', args.regex])
    return chosen + ['--exclude-list', excluded]


def listed_tests(tempest_venv, workspace, args):
    """The ids of the tests the selection names (``tempest run
    --list-tests``)."""
    done = subprocess.run(
        [os.path.join(tempest_venv, 'bin', 'tempest'), 'run',
         '--list-tests'] + _selection(args), cwd=workspace,
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        check=False)
    return [line.strip() for line in done.stdout.splitlines()
            if line.startswith('tempest.')]


_CLASS_FIXTURE = re.compile(r'^(setUpClass|tearDownClass) \((.+)\)$')


def per_test(listed, results):
    """(one result per listed test, the class fixtures that failed).

    A class whose ``setUpClass`` was skipped or failed reports that once,
    and none of its tests: each of them gets the class's result (a skip
    with its reason; a failure, cause ``setUpClass failed: ...``). A test
    with no result at all is failed, ``not run``."""
    classes, fixtures = {}, {}
    for test, result in results.items():
        match = _CLASS_FIXTURE.match(test)
        if match and match.group(1) == 'setUpClass':
            classes[match.group(2)] = result
        if match and result['status'] == 'failed':
            fixtures[test] = result
    expanded = {}
    for test in listed:
        result = results.get(test)
        whole = classes.get(test.split('[')[0].rsplit('.', 1)[0])
        if result is None and whole is None:
            result = {'status': 'failed', 'cause': 'not run (no result)'}
        elif result is None and whole['status'] == 'skipped':
            result = dict(whole)
        elif result is None:
            result = {'status': whole['status'],
                      'cause': 'setUpClass failed: %s' % whole.get('cause')}
        expanded[test] = result
    return expanded, fixtures


def summarise(results):
    counts = {'passed': 0, 'failed': 0, 'skipped': 0}
    for result in results.values():
        counts[result['status']] = counts.get(result['status'], 0) + 1
    causes = {}
    for test, result in sorted(results.items()):
        if result['status'] == 'failed':
            causes.setdefault(result['cause'], []).append(test)
    return counts, causes


def _one_line(reason):
    return ' '.join((reason or '(no reason given)').split()).replace(
        '|', '\\|')


def write_skips(path, results, title, tempest_version):
    skipped = sorted((t, r['reason']) for t, r in results.items()
                     if r['status'] == 'skipped')
    lines = [
        '# Tempest: skipped tests', '',
        'Generated by `tools/tempest.sh --skips-doc docs/tempest-skips.md`'
        ' (`tox -e tempest`) from the subunit results of %s, Tempest %s, '
        'on %s. Every test Tempest skipped, with the reason it gave: a '
        'feature flag of `tools/tempest.py` (`FEATURES`, set from what '
        'Tristate builds), a service that is off (Neutron, Cinder, Swift),'
        ' or a microversion outside 2.1 .. %s. "Neutron is not available" '
        'is the skip of every test class that sets `create_default_network`'
        ' (Tempest gives such a class a network of its own): they run only'
        ' with Neutron.' % (
            title, tempest_version, datetime.date.today().isoformat(),
            MAX_MICROVERSION), '',
        '%d skipped, by reason:' % len(skipped), '',
        '| tests | reason |', '|---|---|']
    reasons = {}
    for _, reason in skipped:
        reasons[_one_line(reason)] = reasons.get(_one_line(reason), 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda r: -r[1]):
        lines.append('| %d | %s |' % (count, reason))
    lines += ['', 'Every skipped test:', '', '| test | reason |', '|---|---|']
    for test, reason in skipped:
        lines.append('| `%s` | %s |' % (test, _one_line(reason)))
    if EXCLUDED:
        lines += ['', 'Left out of the run (`EXCLUDED` in '
                  '`tools/tempest.py`, `--exclude-list`): %d test(s) that no '
                  'Tempest flag skips and that assume what Tristate does not '
                  'have.' % len(EXCLUDED), '', '| test | why |', '|---|---|']
        for test, why in sorted(EXCLUDED.items()):
            lines.append('| `%s` | %s |' % (test, _one_line(why)))
    with open(path, 'w') as out:
        out.write('\n'.join(lines) + '\n')


def write_ci_list(path, results, tempest_version):
    """The tests of :data:`CI_AREAS` that passed, of the classes that
    build no servers (:data:`CI_FAST`) and of :data:`CI_SERVERS`, one
    regex a line matching the test's id with or without its
    attributes."""
    names = sorted({test.split('[')[0] for test, result in results.items()
                    if result['status'] == 'passed'
                    and CI_AREAS.match(test)
                    and (CI_SERVERS.search(test) or (
                        CI_FAST.search(test) and not CI_SLOW.search(test)))})
    lines = ['# CI\'s Tempest subset (tests/integration/test_tempest_subset'
             '.py): the tests of servers, flavors,',
             '# limits, quotas and admin that build no server, and two '
             'classes that do, that passed in',
             '# a full run of Tempest %s; made by' % tempest_version,
             '# `tools/tempest.sh --ci-list tools/tempest-ci.txt`. One '
             'regex a line (stestr --include-list).']
    lines += ['^%s(\\[|$)' % re.escape(name) for name in names]
    with open(path, 'w') as out:
        out.write('\n'.join(lines) + '\n')


def _tempest_version(tempest_venv):
    done = subprocess.run([os.path.join(tempest_venv, 'bin', 'python'), '-c',
                           'import importlib.metadata as m; '
                           'print(m.version("tempest"))'],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or 'unknown'


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument('--regex', default=DEFAULT_REGEX,
                        help='tests to run (default: %(default)s)')
    chosen.add_argument('--include-list', metavar='FILE',
                        help='a file of test-id regexes, one a line')
    parser.add_argument('--workspace', default=os.path.join(
        ROOT, '.tempest', 'workspace'), help='Tempest workspace (replaced)')
    parser.add_argument('--concurrency', type=int, default=2)
    parser.add_argument('--skips-doc', metavar='PATH',
                        help='write the skipped tests and reasons here')
    parser.add_argument('--summary', metavar='PATH',
                        help='write counts and failures as JSON here')
    parser.add_argument('--ci-list', metavar='PATH',
                        help='write the tests of CI\'s areas that passed '
                             '(an --include-list; CI\'s is %s)'
                             % os.path.relpath(CI_LIST, ROOT))
    return parser.parse_args(argv)


def _report(args, results, fixtures, elapsed, tempest_venv):
    counts, causes = summarise(results)
    version = _tempest_version(tempest_venv)
    title = ('`--include-list %s`' % args.include_list if args.include_list
             else '`--regex %s`' % args.regex)
    print('== Tempest %s, %s: %d passed, %d failed, %d skipped in %.0f s'
          % (version, title, counts['passed'], counts['failed'],
             counts['skipped'], elapsed), flush=True)
    for cause, tests in sorted(causes.items(), key=lambda c: -len(c[1])):
        print('   %4d  %s' % (len(tests), cause))
    print('== %d class fixtures failed (their tests are counted above); '
          '%d test(s) left out (EXCLUDED)' % (len(fixtures), len(EXCLUDED)))
    if args.skips_doc:
        write_skips(args.skips_doc, results, title, version)
    if args.ci_list:
        write_ci_list(args.ci_list, results, version)
    if args.summary:
        with open(args.summary, 'w') as out:
            json.dump({'tempest': version, 'selection': title,
                       'seconds': round(elapsed), 'counts': counts,
                       'failures': causes, 'class_fixtures': fixtures,
                       'excluded': sorted(EXCLUDED),
                       'results': results}, out,
                      indent=1, sort_keys=True)
    return 1 if counts['failed'] else 0


def main(argv=None):
    args = parse_args(argv)
    tempest_venv = _require_tempest()
    keystone_venv = os.environ.get(keystone_support.KEYSTONE_ENV)
    if not keystone_venv:
        raise SystemExit('%s must name a virtualenv with keystone and '
                         'gunicorn (tools/tempest.sh makes one)'
                         % keystone_support.KEYSTONE_ENV)
    workspace = os.path.abspath(args.workspace)
    services_dir = workspace + '-services'
    shutil.rmtree(services_dir, ignore_errors=True)
    os.makedirs(services_dir)
    with keystone_support.running(keystone_venv) as keystone:
        plane = keystone_support.TristateAll(
            services_dir, keystone, hosts=HOSTS,
            sections=PLANE_SECTIONS).start()
        try:
            token = keystone.token()
            make_network(plane, token)
            sections = tempest_conf(keystone, upload_images(plane, token),
                                    plane.flavors(token), workspace)
            init_workspace(tempest_venv, workspace, sections)
            elapsed = run_tempest(tempest_venv, workspace, args)
        finally:
            plane.stop()
            shutil.copy(keystone.log, services_dir)
    results = read_results(tempest_venv, workspace)
    if not results:
        print('== no results: see %s/run.log' % workspace)
        return 2
    results, fixtures = per_test(
        listed_tests(tempest_venv, workspace, args), results)
    return _report(args, results, fixtures, elapsed, tempest_venv)


if __name__ == '__main__':
    sys.exit(main())
