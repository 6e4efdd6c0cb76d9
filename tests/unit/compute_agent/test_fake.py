"""The fake hypervisor: power effects, the shared store, latency, faults,
watching and migration (compute_agent/virt/fake.py)."""

import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
from oslo_config import cfg

from common import conf as tconf
from common.conf import fake_driver as fake_conf
from common.states import power
from compute_agent.cmd import fakevirt
from compute_agent.virt import driver
from compute_agent.virt import fake
from compute_agent.virt.driver import DomainInfo, VirtError

SMALL = driver.Flavor('m1.small', 1, 2048, 20)
LARGE = driver.Flavor('m1.large', 4, 8192, 80)
UUID = '11111111-2222-3333-4444-555555555555'


def wait_for(predicate, timeout=2.0):
    """Poll ``predicate`` until true; False if ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


@pytest.fixture
def make(tmp_path):
    """Build initialised drivers on one state dir; stop them afterwards."""
    made = []

    def _make(host='h1', **kwargs):
        kwargs.setdefault('poll_interval', 0.02)
        drv = fake.FakeDriver(state_dir=str(tmp_path), **kwargs)
        drv.init_host(host)
        made.append(drv)
        return drv

    yield _make
    for drv in made:
        drv.cleanup_host()


@pytest.fixture
def drv(make):
    return make()


def spawned(drv, uuid=UUID):
    drv.spawn(uuid, name='vm-1', flavor=SMALL, image_ref='img-1')
    return uuid


def state(drv, uuid=UUID):
    info = drv.get_domain(uuid)
    return None if info is None else (info.power_state, info.reason)


# --- power effects ---------------------------------------------------------------

def test_spawn_defines_a_running_domain(drv):
    spawned(drv)
    assert drv.list_domains() == [DomainInfo(UUID, power.RUNNING, None)]
    rec = drv.domain_record(UUID)
    assert rec['name'] == 'vm-1'
    assert rec['flavor'] == {'name': 'm1.small', 'vcpus': 1,
                             'memory_mb': 2048, 'disk_gb': 20}
    assert rec['image_ref'] == 'img-1'
    assert rec['rescued'] is False and rec['previous_flavor'] is None


def test_spawn_accepts_a_flavor_dict(drv):
    drv.spawn(UUID, name='vm', image_ref='i', flavor={
        'name': 'f', 'vcpus': 2, 'memory_mb': 1, 'disk_gb': 3, 'extra': 1})
    assert drv.domain_record(UUID)['flavor'] == {
        'name': 'f', 'vcpus': 2, 'memory_mb': 1, 'disk_gb': 3}


def test_spawn_of_an_existing_domain_fails_cleanly(drv):
    spawned(drv)
    with pytest.raises(VirtError) as err:
        spawned(drv)
    assert err.value.rolled_back


@pytest.mark.parametrize('before,call,after', [
    ([], ('power_off', {}), power.SHUTDOWN),
    (['power_off'], ('power_off', {}), power.SHUTDOWN),
    (['power_off'], ('power_on', {}), power.RUNNING),
    ([], ('power_on', {}), power.RUNNING),
    ([], ('reboot', {}), power.RUNNING),
    (['power_off'], ('reboot', {'hard': True}), power.RUNNING),
    ([], ('pause', {}), power.PAUSED),
    (['pause'], ('unpause', {}), power.RUNNING),
    ([], ('suspend', {}), power.SUSPENDED),
    (['pause'], ('suspend', {}), power.SUSPENDED),
    (['suspend'], ('resume', {}), power.RUNNING),
    (['power_off'], ('rescue', {'image_ref': 'rescue-img'}), power.RUNNING),
    (['rescue'], ('unrescue', {}), power.RUNNING),
    ([], ('rebuild', {'image_ref': 'img-2'}), power.RUNNING),
    (['power_off'], ('rebuild', {'image_ref': 'img-2'}), power.SHUTDOWN),
    (['power_off'], ('resize', {'flavor': LARGE}), power.SHUTDOWN),
    (['resize'], ('confirm_resize', {}), power.RUNNING),
    (['resize'], ('revert_resize', {}), power.RUNNING),
    (['pause'], ('snapshot', {'image_name': 'snap'}), power.PAUSED),
    ([], ('set_password', {'password': 'secret'}), power.RUNNING),
])
def test_operation_power_effect(drv, before, call, after):
    spawned(drv)
    setup = {'rescue': {'image_ref': 'r'}, 'resize': {'flavor': LARGE}}
    for operation in before:
        getattr(drv, operation)(UUID, **setup.get(operation, {}))
    seq = drv.domain_record(UUID)['seq']
    operation, kwargs = call
    getattr(drv, operation)(UUID, **kwargs)
    assert state(drv) == (after, None)
    rec = drv.domain_record(UUID)
    assert rec['seq'] > seq
    assert rec['last_op'] == operation


@pytest.mark.parametrize('before,operation,kwargs', [
    (['power_off'], 'pause', {}),
    ([], 'unpause', {}),
    (['power_off'], 'suspend', {}),
    ([], 'resume', {}),
    ([], 'unrescue', {}),
    (['rescue'], 'rescue', {'image_ref': 'r'}),
    ([], 'confirm_resize', {}),
    ([], 'revert_resize', {}),
    (['resize'], 'resize', {'flavor': LARGE}),
    (['power_off'], 'set_password', {'password': 'x'}),
    (['power_off'], 'migrate_out', {'dest': 'h2'}),
])
def test_operation_from_the_wrong_state_fails_cleanly(drv, before, operation,
                                                      kwargs):
    spawned(drv)
    setup = {'rescue': {'image_ref': 'r'}, 'resize': {'flavor': LARGE}}
    for op in before:
        getattr(drv, op)(UUID, **setup.get(op, {}))
    rec = drv.domain_record(UUID)
    with pytest.raises(VirtError) as err:
        getattr(drv, operation)(UUID, **kwargs)
    assert err.value.rolled_back
    assert drv.domain_record(UUID) == rec


def test_rescue_and_unrescue_set_the_flag(drv):
    spawned(drv)
    drv.rescue(UUID, image_ref='rescue-img')
    rec = drv.domain_record(UUID)
    assert rec['rescued'] and rec['rescue_image_ref'] == 'rescue-img'
    drv.unrescue(UUID)
    assert not drv.domain_record(UUID)['rescued']


def test_resize_keeps_the_old_flavor_until_confirmed(drv):
    spawned(drv)
    drv.resize(UUID, flavor=LARGE)
    rec = drv.domain_record(UUID)
    assert (rec['flavor']['name'], rec['previous_flavor']['name']) == (
        'm1.large', 'm1.small')
    drv.confirm_resize(UUID)
    rec = drv.domain_record(UUID)
    assert (rec['flavor']['name'], rec['previous_flavor']) == ('m1.large', None)


def test_revert_resize_restores_the_old_flavor(drv):
    spawned(drv)
    drv.resize(UUID, flavor=LARGE)
    drv.revert_resize(UUID)
    rec = drv.domain_record(UUID)
    assert (rec['flavor']['name'], rec['previous_flavor']) == ('m1.small', None)


def test_rebuild_and_snapshot_are_recorded(drv):
    spawned(drv)
    drv.rebuild(UUID, image_ref='img-2')
    drv.snapshot(UUID, image_name='snap-1')
    rec = drv.domain_record(UUID)
    assert rec['image_ref'] == 'img-2' and rec['snapshots'] == ['snap-1']


def test_a_snapshot_target_is_a_qcow2_disk_naming_it(drv, tmp_path):
    """Snapshot images are created qcow2 and the image service checks the
    content: the fake writes a real qcow2, whose disk names the domain."""
    from common.images import formats
    spawned(drv)
    target = tmp_path / 'snap.qcow2'
    assert drv.snapshot(UUID, image_name='snap-1', target=str(target)) == (
        'qcow2')
    info = formats.check_file(str(target), 'qcow2')
    assert info.virtual_size == fake.SNAPSHOT_SIZE
    if shutil.which('qemu-img') is None:
        return
    check = subprocess.run(['qemu-img', 'check', '-f', 'qcow2', str(target)],
                           check=False, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    raw = tmp_path / 'snap.raw'
    subprocess.run(['qemu-img', 'convert', '-f', 'qcow2', '-O', 'raw',
                    str(target), str(raw)], check=True)
    assert raw.read_bytes() == fake.snapshot_disk(UUID, 'snap-1')
    assert raw.read_bytes().startswith(b'tristate fake disk of %s' %
                                       UUID.encode())


def test_destroy_removes_the_domain_and_is_idempotent(drv):
    spawned(drv)
    drv.destroy(UUID)
    assert drv.get_domain(UUID) is None and drv.list_domains() == []
    drv.destroy(UUID)


def test_operations_on_a_missing_domain_raise_domain_not_found(drv):
    with pytest.raises(driver.DomainNotFound):
        drv.power_on(UUID)


def test_a_requested_operation_clears_the_outside_reason(drv):
    spawned(drv)
    drv.store.set_power(UUID, power.SHUTDOWN, 'guest', by='test')
    assert state(drv) == (power.SHUTDOWN, 'guest')
    drv.power_on(UUID)
    assert state(drv) == (power.RUNNING, None)


def test_seq_grows_on_every_change(drv):
    spawned(drv)
    seqs = [drv.domain_record(UUID)['seq']]
    for operation in ('pause', 'unpause', 'power_off', 'power_on'):
        getattr(drv, operation)(UUID)
        seqs.append(drv.domain_record(UUID)['seq'])
    assert seqs == sorted(set(seqs))


def test_use_before_init_host_is_an_error(tmp_path):
    with pytest.raises(VirtError):
        fake.FakeDriver(state_dir=str(tmp_path)).list_domains()


# --- capacity and configuration --------------------------------------------------

def test_capacity_default_and_configured(make):
    assert make().get_capacity() == fake.DEFAULT_CAPACITY
    cap = driver.Capacity(2, 1024, 10)
    assert make(capacity=cap).get_capacity() == cap


def test_from_conf_reads_the_fake_driver_group(tmp_path):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([])
    conf.set_override('state_dir', str(tmp_path))
    conf.set_override('vcpus', 4, group='fake_driver')
    conf.set_override('latency', {'spawn': 0.5}, group='fake_driver')
    conf.set_override('faults', {'pause': 'fail'}, group='fake_driver')
    conf.set_override('hang_timeout', 7.0, group='fake_driver')
    drv = fake.FakeDriver.from_conf(conf)
    assert drv.state_dir == str(tmp_path)
    assert drv.get_capacity() == driver.Capacity(4, 65536, 1000)
    assert drv.latency == {'spawn': 0.5} and drv.faults == {'pause': 'fail'}
    assert (drv.poll_interval, drv.hang_timeout) == (0.1, 7.0)


def test_overrides_do_not_leak_between_config_objects():
    first, second = cfg.ConfigOpts(), cfg.ConfigOpts()
    for conf in (first, second):
        tconf.register_all(conf)
        conf([])
    first.set_override('faults', {'spawn': 'fail'}, group='fake_driver')
    assert second.fake_driver.faults == {}


def test_conf_and_driver_agree_on_modes_and_operations():
    assert fake_conf.FAULT_MODES == fake.FAULT_MODES
    assert fake_conf._OPERATIONS == ', '.join(fake.OPERATIONS)


def test_latency_and_faults_parse_from_a_config_file(tmp_path):
    conf_file = tmp_path / 'tristate.conf'
    conf_file.write_text('[fake_driver]\nlatency = spawn:0.5,pause:2\n'
                         'faults = resize:hang,pause:fail_no_rollback\n')
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf(['--config-file', str(conf_file)])
    assert conf.fake_driver.latency == {'spawn': 0.5, 'pause': 2.0}
    assert conf.fake_driver.faults == {'resize': 'hang',
                                       'pause': 'fail_no_rollback'}


@pytest.mark.parametrize('kwargs', [
    {'faults': {'fly': 'fail'}}, {'faults': {'spawn': 'explode'}},
    {'latency': {'fly': 1.0}}, {'latency': {'spawn': -1}},
])
def test_bad_latency_or_faults_are_rejected(tmp_path, kwargs):
    with pytest.raises(ValueError):
        fake.FakeDriver(state_dir=str(tmp_path), **kwargs)


# --- latency -----------------------------------------------------------------------

def test_latency_is_slept_before_the_operation(make):
    slept = []
    drv = make(latency={'spawn': 2.5, 'pause': 0.5}, sleep=slept.append)
    spawned(drv)
    drv.pause(UUID)
    drv.unpause(UUID)
    assert slept == [2.5, 0.5]


def test_real_latency_delays_the_operation(make):
    drv = make(latency={'spawn': 0.05})
    start = time.monotonic()
    spawned(drv)
    assert time.monotonic() - start >= 0.05


# --- faults ----------------------------------------------------------------------

def test_fail_raises_rolled_back_and_leaves_the_domain(drv):
    spawned(drv)
    rec = drv.domain_record(UUID)
    drv.store.set_fault('pause', 'fail')
    with pytest.raises(VirtError) as err:
        drv.pause(UUID)
    assert err.value.rolled_back and 'injected fault' in str(err.value)
    assert drv.domain_record(UUID) == rec


def test_fail_no_rollback_leaves_the_domain_crashed(drv):
    spawned(drv)
    drv.store.set_fault('resize', 'fail_no_rollback')
    with pytest.raises(VirtError) as err:
        drv.resize(UUID, flavor=LARGE)
    assert not err.value.rolled_back
    assert state(drv) == (power.CRASHED, 'unknown')
    assert drv.domain_record(UUID)['broken_by'] == 'resize'


def test_spawn_fail_no_rollback_leaves_a_broken_domain(drv):
    drv.store.set_fault('spawn', 'fail_no_rollback')
    with pytest.raises(VirtError) as err:
        spawned(drv)
    assert not err.value.rolled_back
    assert state(drv) == (power.CRASHED, 'unknown')


def test_a_counted_fault_fires_that_many_times(drv):
    spawned(drv)
    drv.store.set_fault('reboot', 'fail', count=2)
    for _ in range(2):
        with pytest.raises(VirtError):
            drv.reboot(UUID)
    drv.reboot(UUID)
    assert drv.store.read()['faults']['reboot']['remaining'] == 0


def test_config_faults_are_written_to_the_store_and_can_be_cleared(make):
    drv = make(faults={'pause': 'fail'})
    spawned(drv)
    assert drv.store.read()['faults']['pause']['mode'] == 'fail'
    with pytest.raises(VirtError):
        drv.pause(UUID)
    assert drv.store.clear_faults() == 1
    drv.pause(UUID)
    assert state(drv) == (power.PAUSED, None)


def test_a_fault_set_by_another_driver_fires_here(make):
    drv, other = make(), make()
    spawned(drv)
    other.store.set_fault('power_off', 'fail')
    with pytest.raises(VirtError):
        drv.power_off(UUID)


def test_destroy_can_fail_by_fault(drv):
    spawned(drv)
    drv.store.set_fault('destroy', 'fail', count=1)
    with pytest.raises(VirtError):
        drv.destroy(UUID)
    assert drv.get_domain(UUID) is not None
    drv.destroy(UUID)
    assert drv.get_domain(UUID) is None


def run_in_thread(func, *args, **kwargs):
    """Start ``func``; return (thread, outcome dict filled when it ends)."""
    outcome = {}

    def target():
        try:
            outcome['result'] = func(*args, **kwargs)
        except Exception as exc:
            outcome['error'] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def hang_started(drv, operation):
    return lambda: drv.store.read()['faults'][operation]['remaining'] == 0


def test_hang_ends_when_another_driver_clears_the_fault(make):
    drv, other = make(), make()
    spawned(drv)
    drv.store.set_fault('power_off', 'hang', count=1)
    thread, outcome = run_in_thread(drv.power_off, UUID)
    assert wait_for(hang_started(drv, 'power_off'))
    assert thread.is_alive()
    other.store.clear_faults()
    thread.join(timeout=2)
    assert not thread.is_alive()
    assert isinstance(outcome['error'], VirtError)
    assert outcome['error'].rolled_back
    assert state(drv) == (power.RUNNING, None)


def test_hang_ends_when_the_host_is_cleaned_up(make):
    drv = make()
    spawned(drv)
    drv.store.set_fault('pause', 'hang', count=1)
    thread, outcome = run_in_thread(drv.pause, UUID)
    assert wait_for(hang_started(drv, 'pause'))
    drv.cleanup_host()
    thread.join(timeout=2)
    assert not thread.is_alive()
    assert 'stopped' in str(outcome['error'])


def test_hang_gives_up_after_hang_timeout(make):
    drv = make(hang_timeout=0.05)
    spawned(drv)
    drv.store.set_fault('suspend', 'hang')
    with pytest.raises(VirtError, match='hung for'):
        drv.suspend(UUID)


# --- sharing the store --------------------------------------------------------

def test_two_drivers_on_one_host_see_each_others_changes(make):
    one, two = make(), make()
    spawned(one)
    assert state(two) == (power.RUNNING, None)
    two.pause(UUID)
    assert state(one) == (power.PAUSED, None)
    one.destroy(UUID)
    assert two.list_domains() == []


def test_concurrent_writers_lose_no_change(make):
    drivers = [make(), make()]
    threads = [threading.Thread(target=lambda d=d, i=i: [
        d.spawn('%d-%d' % (i, n), name='vm', flavor=SMALL, image_ref='i')
        for n in range(15)]) for i, d in enumerate(drivers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(drivers[0].list_domains()) == 30
    assert drivers[0].store.read()['seq'] == 30


_WRITER = """
import sys
from compute_agent.virt import driver, fake
drv = fake.FakeDriver(state_dir=sys.argv[1])
drv.init_host('h1')
for n in range(20):
    drv.spawn('%s-%d' % (sys.argv[2], n), name='vm', image_ref='i',
              flavor=driver.Flavor('f', 1, 1, 1))
"""


def test_writers_in_other_processes_lose_no_change(drv):
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=root)
    procs = [subprocess.Popen([sys.executable, '-c', _WRITER, drv.state_dir,
                               'p%d' % i], env=env) for i in range(3)]
    assert [proc.wait(timeout=60) for proc in procs] == [0, 0, 0]
    assert len(drv.list_domains()) == 60


def test_hosts_are_separate(make):
    one, two = make('h1'), make('h2')
    spawned(one)
    assert two.list_domains() == []
    assert fake.list_hosts(one.state_dir) == ['h1', 'h2']
    assert fake.find_host(one.state_dir, UUID) == 'h1'


# --- migration -----------------------------------------------------------------

def test_migrate_out_moves_the_record_between_host_stores(make):
    src, dest = make('h1'), make('h2')
    spawned(src)
    src.resize(UUID, flavor=LARGE)
    src.confirm_resize(UUID)
    seq = src.domain_record(UUID)['seq']
    src.migrate_out(UUID, dest='h2')
    assert src.get_domain(UUID) is None
    assert state(dest) == (power.RUNNING, None)
    rec = dest.domain_record(UUID)
    assert rec['flavor']['name'] == 'm1.large' and rec['seq'] > seq
    assert fake.find_host(src.state_dir, UUID) == 'h2'


def test_migrate_out_fault_leaves_the_domain_at_the_source(make):
    src, dest = make('h1'), make('h2')
    spawned(src)
    src.store.set_fault('migrate_out', 'fail')
    with pytest.raises(VirtError):
        src.migrate_out(UUID, dest='h2')
    assert state(src) == (power.RUNNING, None) and dest.list_domains() == []


def test_migrate_out_to_a_host_that_has_the_domain_fails_cleanly(make):
    src, dest = make('h1'), make('h2')
    spawned(src)
    spawned(dest)
    with pytest.raises(VirtError):
        src.migrate_out(UUID, dest='h2')
    with pytest.raises(VirtError):
        src.migrate_out(UUID, dest='h1')
    assert state(src) == (power.RUNNING, None)


# --- watching ------------------------------------------------------------------

class Reports:
    """A watch callback that lets a test wait for one report."""

    def __init__(self):
        self.infos = []
        self._cond = threading.Condition()

    def __call__(self, info):
        with self._cond:
            self.infos.append(info)
            self._cond.notify_all()

    def wait(self, expected, timeout=2.0):
        with self._cond:
            return self._cond.wait_for(lambda: expected in self.infos, timeout)


def test_watch_reports_a_guest_shutdown_made_with_the_cli(drv):
    spawned(drv)
    reports = Reports()
    drv.watch(reports)
    assert fakevirt.main(['--state-dir', drv.state_dir,
                          'guest-shutdown', UUID]) == 0
    assert reports.wait(DomainInfo(UUID, power.SHUTDOWN, 'guest'))


def test_watch_reports_a_vanished_domain_as_nostate(drv):
    spawned(drv)
    reports = Reports()
    drv.watch(reports)
    assert fakevirt.main(['--state-dir', drv.state_dir, 'vanish', UUID]) == 0
    assert reports.wait(DomainInfo(UUID, power.NOSTATE, None))


def test_watch_reports_the_drivers_own_changes_and_new_domains(make):
    drv, other = make(), make()
    reports = Reports()
    drv.watch(reports)
    spawned(other)
    assert reports.wait(DomainInfo(UUID, power.RUNNING, None))
    drv.pause(UUID)
    assert reports.wait(DomainInfo(UUID, power.PAUSED, None))


def test_a_failing_callback_does_not_stop_the_watcher(drv):
    spawned(drv)
    reports = Reports()
    drv.watch(lambda info: 1 / 0)
    drv.watch(reports)
    drv.pause(UUID)
    assert reports.wait(DomainInfo(UUID, power.PAUSED, None))
    drv.unpause(UUID)
    assert reports.wait(DomainInfo(UUID, power.RUNNING, None))


def test_cleanup_host_stops_the_watcher(drv):
    drv.watch(Reports())
    watcher = drv._watcher
    drv.cleanup_host()
    assert not watcher.is_alive()
