"""The ``tristate`` command line end to end, against ``tristate-all``
started as a separate process (README's two-shell walk-through): an image
uploaded, create from it by name, list, a guest shutting itself down behind
our back, a denied action, start, the action log, hosts, delete; the image
commands and how ``--image`` finds an image by name."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from tests import support
from tests.functional.conftest import wait_for

STARTUP_TIMEOUT = 60.0
COMMAND_TIMEOUT = 60.0


def _command(script, module):
    """The installed console script, or the same main() through python."""
    path = pathlib.Path(sys.executable).with_name(script)
    if path.exists():
        return [str(path)]
    return [sys.executable, '-c',
            'import sys; from %s import main; sys.exit(main())' % module]


class AllInOne:
    """A running ``tristate-all`` and the commands that talk to it."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.port = support.free_port()
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        self.log_path = state_dir / 'tristate-all.log'
        (state_dir / 'empty.conf').write_text('')
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(('TRISTATE_', 'OS_'))}
        self.env['TRISTATE_ENDPOINT'] = self.endpoint
        self.proc = None

    def start(self):
        with open(self.log_path, 'w') as log:
            self.proc = subprocess.Popen(
                _command('tristate-all', 'conductor.cmd.all') + [
                    '--config-file', str(self.state_dir / 'empty.conf'),
                    '--hosts', '2', '--state-dir', str(self.state_dir),
                    '--api-port', str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=self.env)
        wait_for(self._ready, timeout=STARTUP_TIMEOUT,
                 what='tristate-all to serve with two hosts up',
                 show=self.log_tail)
        return self

    def _ready(self):
        if self.proc.poll() is not None:
            pytest.fail('tristate-all exited with %s:\n%s'
                        % (self.proc.returncode, self.log_tail()))
        return support.hypervisors_up(self.endpoint + '/v2.1') == 2

    def log_tail(self, lines=40):
        text = self.log_path.read_text() if self.log_path.exists() else ''
        return '\n'.join(text.splitlines()[-lines:])

    def stop(self):
        support.stop(self.proc)

    def run(self, *args, ok=True):
        """``tristate ARGS``; its completed process (exit 0 if ``ok``)."""
        done = subprocess.run(
            [sys.executable, '-m', 'api.cli', *args], env=self.env,
            capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
            check=False)
        if ok and done.returncode != 0:
            pytest.fail('tristate %s exited %d:\n%s\n%s' % (
                ' '.join(args), done.returncode, done.stdout, done.stderr))
        return done

    def json(self, *args):
        return json.loads(self.run(*args, '-f', 'json').stdout)

    def fakevirt(self, *args):
        return subprocess.run(
            _command('tristate-fakevirt', 'compute_agent.cmd.fakevirt')
            + ['--state-dir', str(self.state_dir), *args], env=self.env,
            capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
            check=True)


@pytest.fixture(scope='module')
def tristate(tmp_path_factory):
    plane = AllInOne(tmp_path_factory.mktemp('tristate-all'))
    try:
        yield plane.start()
    finally:
        plane.stop()


def _disk(path, size=1024 * 1024):
    """A file of ``size`` bytes: any file is a valid raw image."""
    with open(path, 'wb') as out:
        out.truncate(size)
    return str(path)


@pytest.fixture(scope='module')
def base_image(tristate):
    """An image the action tests build from (by name)."""
    return tristate.json('image', 'create', 'base', '--file',
                         _disk(tristate.state_dir / 'base.raw'))


def test_the_two_shell_walk_through(tristate):
    flavors = tristate.json('flavor', 'list')
    assert [f['Name'] for f in flavors] == ['tiny', 'small', 'medium', 'large']

    image = tristate.json('image', 'create', 'debian-12', '--file',
                          _disk(tristate.state_dir / 'disk.raw'))
    assert (image['status'], image['disk_format'], image['size']) == (
        'active', 'raw', 1024 * 1024)
    web1 = tristate.json('server', 'create', 'web1', '--flavor', 'small',
                         '--image', 'debian-12', '--wait')
    assert (web1['status'], web1['vm_state'], web1['power_state']) == (
        'ACTIVE', 'active', 'RUNNING')
    assert web1['image'] == image['id']
    assert web1['oper_state'] == 'running'
    listed = tristate.json('server', 'list')
    assert [(s['Name'], s['Status']) for s in listed] == [('web1', 'ACTIVE')]
    table = tristate.run('server', 'list').stdout
    assert 'web1' in table and 'ACTIVE' in table and '+--' in table

    # the guest shuts itself down; user_shutdown=stop follows it
    tristate.fakevirt('guest-shutdown', web1['id'])
    wait_for(lambda: tristate.json('server', 'show', 'web1')['status']
             == 'SHUTOFF', what='web1 to be SHUTOFF after the guest shutdown',
             show=lambda: tristate.json('server', 'show', 'web1'))

    denied = tristate.run('server', 'stop', 'web1', ok=False)
    assert denied.returncode == 1
    assert ('Cannot stop instance %s: its vm_state is stopped' % web1['id']
            in denied.stderr)
    assert 'HTTP 409' in denied.stderr

    started = tristate.json('server', 'start', 'web1', '--wait')
    assert (started['status'], started['task_state']) == ('ACTIVE', None)

    log = tristate.json('server', 'actions', 'web1')
    actions = [entry['Action'] for entry in log]
    assert actions[0] == 'build' and actions[-1] == 'start'
    assert all(entry['Result'] == 'success' for entry in log)

    hosts = tristate.json('host', 'list')
    assert sorted(h['Host'] for h in hosts) == ['host1', 'host2']
    assert {h['State'] for h in hosts} == {'up'}
    assert sum(h['Instances'] for h in hosts) == 1

    tristate.run('server', 'delete', 'web1', '--wait')
    assert tristate.json('server', 'list') == []


def test_action_commands_wait_for_the_result(tristate, base_image):
    server = tristate.json('server', 'create', 'acts', '--flavor', 'tiny',
                           '--image', 'base', '--crash', 'stop', '--wait')
    assert server['crash'] == 'stop'
    # Every action command builds a body the API accepts (unit-tested in
    # tests/unit/api/test_cli.py); here a few, with their options, for real.
    steps = [
        (('reboot', '--hard'), 'ACTIVE'),
        (('resize', '--flavor', 'small'), 'VERIFY_RESIZE'),
        (('confirm-resize',), 'ACTIVE'),
        (('rebuild',), 'ACTIVE'),
        (('live-migrate',), 'ACTIVE'),
        (('reset-state', '--state', 'error'), 'ERROR'),
    ]
    for args, status in steps:
        shown = tristate.json('server', args[0], 'acts', *args[1:], '--wait')
        assert shown['status'] == status, (args, shown)
    # what the API answers once: an image's id, rescue's password
    reset = tristate.json('server', 'reset-state', 'acts', '--state',
                          'active')
    assert reset['status'] == 'ACTIVE'
    snap = tristate.json('server', 'snapshot', 'acts', '--name', 's1',
                         '--wait')
    assert len(snap['image_id']) == 36
    rescued = tristate.json('server', 'rescue', 'acts', '--password',
                            'Cli-Pass-9', '--wait')
    assert (rescued['status'], rescued['adminPass']) == ('RESCUE',
                                                         'Cli-Pass-9')
    policy = tristate.json('server', 'set-policy', 'acts', '--user-shutdown',
                           'restart')
    assert policy['user_shutdown'] == 'restart'
    renamed = tristate.json('server', 'rename', 'acts', 'acts-renamed')
    assert renamed['name'] == 'acts-renamed'
    tristate.run('server', 'force-delete', 'acts-renamed')
    missing = tristate.run('server', 'show', 'acts', ok=False)
    assert missing.returncode == 1
    assert "No server with a name or ID of 'acts' exists." in missing.stderr


def test_same_host_and_different_host(tristate, base_image):
    first = tristate.json('server', 'create', 'anchor', '--flavor', 'tiny',
                          '--image', 'base', '--wait')
    near = tristate.json('server', 'create', 'near', '--flavor', 'tiny',
                         '--image', 'base', '--same-host', 'anchor',
                         '--wait')
    far = tristate.json('server', 'create', 'far', '--flavor', 'tiny',
                        '--image', 'base', '--different-host', first['id'],
                        '--different-host', 'near', '--wait')
    assert near['host'] == first['host']
    assert far['host'] not in (None, first['host'])
    assert far['status'] == 'ACTIVE'
    # only two hosts: apart from both, on the host of the one it is near
    stuck = tristate.run('server', 'create', 'nowhere', '--flavor', 'tiny',
                         '--image', 'base', '--same-host', 'near',
                         '--different-host', 'anchor', '--wait', ok=False)
    assert stuck.returncode == 1
    assert ('no host satisfies same_host %s' % near['id']) in stuck.stderr
    assert ('different_host %s' % first['id']) in stuck.stderr
    missing = tristate.run('server', 'create', 'x', '--flavor', 'tiny',
                           '--image', 'base', '--same-host', 'no-such',
                           ok=False)
    assert missing.returncode == 1
    assert "No server with a name or ID of 'no-such'" in missing.stderr
    for name in ('anchor', 'near', 'far', 'nowhere'):
        tristate.run('server', 'delete', name, '--wait')


def test_errors_print_the_api_reason(tristate, base_image):
    bad = tristate.run('server', 'create', 'x', '--flavor', 'enormous',
                       '--image', base_image['id'], ok=False)
    assert bad.returncode == 1
    assert "unknown flavor 'enormous'" in bad.stderr and 'HTTP 400' in bad.stderr
    other = tristate.run('--os-token', 'bob:elsewhere', 'host', 'list',
                         ok=False)
    assert other.returncode == 1
    assert 'HTTP 403' in other.stderr
    nowhere = tristate.run('--os-endpoint', 'http://127.0.0.1:%d'
                           % support.free_port(), 'server', 'list', ok=False)
    assert nowhere.returncode == 1
    assert 'Cannot reach the Tristate API' in nowhere.stderr


def test_image_commands(tristate):
    tiny = _disk(tristate.state_dir / 'tiny.raw', 64 * 1024)
    made = tristate.json('image', 'create', 'sized', '--file', tiny,
                         '--min-disk', '1', '--min-ram', '128', '--public')
    assert (made['status'], made['visibility'], made['size'],
            made['min_disk'], made['min_ram']) == ('active', 'public',
                                                   64 * 1024, 1, 128)
    assert made['os_hash_algo'] == 'sha512' and len(made['checksum']) == 32
    listed = {i['ID']: i for i in tristate.json('image', 'list')}
    assert (listed[made['id']]['Name'],
            listed[made['id']]['Status']) == ('sized', 'active')
    table = tristate.run('image', 'list').stdout
    assert 'sized' in table and '+--' in table
    assert tristate.json('image', 'show', 'sized') == made
    assert tristate.json('image', 'show', made['id']) == made

    # a private image is not another project's; a public one is
    private = tristate.json('image', 'create', 'mine', '--file', tiny)
    other = ('--os-token', 'bob:elsewhere')
    hidden = tristate.run(*other, 'image', 'show', private['id'], ok=False)
    assert hidden.returncode == 1
    assert ("No image with a name or ID of %r exists" % private['id']
            in hidden.stderr)
    assert tristate.json(*other, 'image', 'show', 'sized')['id'] == made['id']

    # the content must be what --disk-format says: refused, nothing left
    refused = tristate.run('image', 'create', 'fake-qcow2', '--file', tiny,
                           '--disk-format', 'qcow2', ok=False)
    assert refused.returncode == 1 and 'HTTP 4' in refused.stderr
    assert tristate.json('image', 'list', '--name', 'fake-qcow2') == []

    missing = tristate.run('image', 'create', 'x', '--file',
                           str(tristate.state_dir / 'no-such.raw'), ok=False)
    assert missing.returncode == 1 and 'Cannot read --file' in missing.stderr

    tristate.run('image', 'delete', 'sized', private['id'])
    names = [i['Name'] for i in tristate.json('image', 'list')]
    assert 'sized' not in names and 'mine' not in names


def test_image_names_must_match_exactly_one_image(tristate, base_image):
    disk = _disk(tristate.state_dir / 'twin.raw', 4096)
    twins = [tristate.json('image', 'create', 'twin', '--file', disk)['id']
             for _ in range(2)]
    before = tristate.json('server', 'list')

    ambiguous = tristate.run('server', 'create', 'tw', '--flavor', 'tiny',
                             '--image', 'twin', ok=False)
    assert ambiguous.returncode == 1
    assert "More than one image is named 'twin': use its ID" in (
        ambiguous.stderr)
    assert all(twin in ambiguous.stderr for twin in twins)
    unknown = tristate.run('server', 'create', 'tw', '--flavor', 'tiny',
                           '--image', 'no-such-image', ok=False)
    assert unknown.returncode == 1
    assert ("No image with a name or ID of 'no-such-image' exists"
            in unknown.stderr)
    assert tristate.json('server', 'list') == before   # nothing created
    assert tristate.run('image', 'show', 'twin', ok=False).returncode == 1
    assert 'server create' in tristate.run('server', 'create', 'tw',
                                           '--flavor', 'tiny',
                                           ok=False).stderr  # --image needed

    # by id, a twin is fine; then rebuild and rescue find images by name
    server = tristate.json('server', 'create', 'tw', '--flavor', 'tiny',
                           '--image', twins[0], '--wait')
    assert (server['status'], server['image']) == ('ACTIVE', twins[0])
    tristate.run('image', 'delete', twins[1])
    rebuilt = tristate.json('server', 'rebuild', 'tw', '--image', 'base',
                            '--wait')
    assert (rebuilt['status'], rebuilt['image']) == ('ACTIVE',
                                                     base_image['id'])
    unknown = tristate.run('server', 'rescue', 'tw', '--image', 'nope',
                           ok=False)
    assert "No image with a name or ID of 'nope' exists" in unknown.stderr
    rescued = tristate.json('server', 'rescue', 'tw', '--image', 'twin',
                            '--wait')
    assert rescued['status'] == 'RESCUE'
    actions = [e['Action'] for e in tristate.json('server', 'actions', 'tw')]
    assert actions == ['build', 'rebuild', 'rescue']
    tristate.run('server', 'delete', 'tw', '--wait')
