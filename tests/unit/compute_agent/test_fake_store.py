"""The fake hypervisor's files: one per domain, a journal for the watcher,
atomic writes, the old single-file store (compute_agent/virt/fake_store.py)."""

import json
import os
import subprocess
import sys
import threading

import pytest

from common.states import power
from compute_agent.virt import driver
from compute_agent.virt import fake
from compute_agent.virt import fake_store
from compute_agent.virt.driver import DomainInfo, VirtError

SMALL = driver.Flavor('m1.small', 1, 2048, 20)
UUID = '11111111-2222-3333-4444-555555555555'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@pytest.fixture
def drv(tmp_path):
    made = fake.FakeDriver(state_dir=str(tmp_path), poll_interval=0.02)
    made.init_host('h1')
    yield made
    made.cleanup_host()


def spawn(drv, uuid=UUID):
    drv.spawn(uuid, name='vm', flavor=SMALL, image_ref='img')
    return uuid


def many(drv, count):
    """``count`` domains besides UUID, spawned on ``drv``'s host."""
    return [spawn(drv, 'other-%d' % n) for n in range(count)]


class Touched:
    """Records every store file read or written (monkeypatched in)."""

    def __init__(self, monkeypatch):
        self.read, self.written = [], []
        load, stage = fake_store._load, fake_store._stage
        monkeypatch.setattr(fake_store, '_load', lambda path: (
            self.read.append(os.path.basename(path)), load(path))[1])
        monkeypatch.setattr(fake_store, '_stage', lambda path, value: (
            self.written.append(os.path.basename(path)),
            stage(path, value))[1])


def watcher(drv):
    """A watcher polled by hand, and the DomainInfos it reported."""
    infos = []
    w = fake._Watcher(drv.store, threading.Event(), 1.0)
    w.callbacks.append(infos.append)
    return w, infos


# --- the layout ------------------------------------------------------------------

def test_each_domain_is_a_file_of_its_own(drv):
    spawn(drv)
    host_dir = os.path.join(fake.store_dir(drv.state_dir), 'h1')
    assert sorted(os.listdir(os.path.join(host_dir, 'domains'))) == [
        UUID + '.json']
    with open(os.path.join(host_dir, 'domains', UUID + '.json')) as f:
        assert json.load(f)['power_state'] == power.RUNNING
    drv.destroy(UUID)
    assert os.listdir(os.path.join(host_dir, 'domains')) == []


def test_domain_names_cannot_leave_the_store(drv):
    with pytest.raises(ValueError, match="'../h2/host': expected a non-empty"):
        drv.store.domain('../h2/host')
    with pytest.raises(ValueError, match='does not start with'):
        drv.spawn('.hidden', name='vm', flavor=SMALL, image_ref='img')


def test_an_update_may_not_write_a_domain_it_did_not_name(drv):
    with pytest.raises(ValueError, match='not named'):
        with drv.store.update() as data:
            data['domains'][UUID] = {}
    assert drv.list_domains() == []


# --- cost per operation does not grow with the host's domains -------------------

def test_an_operation_reads_and_writes_only_its_own_domain(drv, monkeypatch):
    spawn(drv)
    many(drv, 20)
    touched = Touched(monkeypatch)
    drv.pause(UUID)
    assert set(touched.read) == {'host.json', UUID + '.json'}
    assert sorted(touched.written) == sorted(['host.json', UUID + '.json'])


def test_queries_of_one_domain_read_one_file(drv, monkeypatch):
    spawn(drv)
    many(drv, 20)
    touched = Touched(monkeypatch)
    assert drv.get_domain(UUID) == DomainInfo(UUID, power.RUNNING, None)
    assert touched.read == [UUID + '.json']


def test_the_watcher_reads_only_what_changed(drv, monkeypatch):
    spawn(drv)
    many(drv, 20)
    w, infos = watcher(drv)
    touched = Touched(monkeypatch)
    w.poll()
    assert touched.read == ['host.json'] and infos == []
    drv.store.set_power(UUID, power.SHUTDOWN, 'guest', by='test')
    del touched.read[:]
    w.poll()
    assert sorted(touched.read) == sorted(['host.json', UUID + '.json'])
    assert infos == [DomainInfo(UUID, power.SHUTDOWN, 'guest')]


def test_a_watcher_behind_the_journal_rescans_and_misses_nothing(
        drv, monkeypatch):
    monkeypatch.setattr(fake_store, 'JOURNAL_LENGTH', 2)
    spawn(drv)
    w, infos = watcher(drv)
    others = many(drv, 3)
    drv.store.remove(UUID)
    assert drv.store.changed_since(w._gen, drv.store.meta()) is None
    w.poll()
    assert infos == [DomainInfo(UUID, power.NOSTATE, None)] + [
        DomainInfo(uuid, power.RUNNING, None) for uuid in others]
    w.poll()
    assert len(infos) == 4


def test_the_journal_stays_bounded(drv, monkeypatch):
    monkeypatch.setattr(fake_store, 'JOURNAL_LENGTH', 3)
    many(drv, 10)
    meta = drv.store.meta()
    assert len(meta['journal']) == 3 and meta['floor'] == meta['gen'] - 3


# --- other processes -------------------------------------------------------------

_OUTSIDE = """
import sys
from common.states import power
from compute_agent.virt import fake
fake.HostStore(sys.argv[1], 'h1').set_power(sys.argv[2], power.CRASHED,
                                            'crashed', by='test')
"""


def test_a_change_from_another_process_is_seen_by_reads_and_the_watcher(drv):
    spawn(drv)
    many(drv, 5)
    w, infos = watcher(drv)
    env = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, '-c', _OUTSIDE, drv.state_dir, UUID],
                   env=env, check=True, timeout=60)
    assert drv.get_domain(UUID) == DomainInfo(UUID, power.CRASHED, 'crashed')
    w.poll()
    assert infos == [DomainInfo(UUID, power.CRASHED, 'crashed')]


# --- failed writes ---------------------------------------------------------------

@pytest.mark.parametrize('failing', ['host.json', UUID + '.json'])
def test_a_write_that_fails_leaves_every_file_as_it_was(drv, monkeypatch,
                                                        failing):
    spawn(drv)
    record, meta = drv.domain_record(UUID), drv.store.meta()
    stage = fake_store._stage

    def broken(path, value):
        if os.path.basename(path) == failing:
            raise OSError(28, 'No space left on device')
        return stage(path, value)

    monkeypatch.setattr(fake_store, '_stage', broken)
    with pytest.raises(OSError):
        drv.pause(UUID)
    assert drv.domain_record(UUID) == record and drv.store.meta() == meta
    for directory in (drv.store.dir, drv.store.domains_dir):
        assert not [n for n in os.listdir(directory) if n.endswith('.tmp')]


def test_a_corrupt_domain_file_is_named_in_the_error(drv):
    spawn(drv)
    path = os.path.join(drv.store.domains_dir, UUID + '.json')
    with open(path, 'w') as f:
        f.write('{"power_st')
    with pytest.raises(VirtError, match=path):
        drv.get_domain(UUID)


# --- the old single-file store ----------------------------------------------------

def _old_store(state_dir, host='h1'):
    rec = fake._new_record(UUID, 'vm', SMALL, 'img')
    rec.update(power_state=power.RUNNING, seq=7)
    path = os.path.join(fake.store_dir(state_dir), host + '.json')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump({'host': host, 'seq': 7, 'domains': {UUID: rec},
                   'faults': {'pause': {'mode': 'fail', 'remaining': None,
                                        'id': 3}}}, f)
    return path


def test_an_old_single_file_store_is_migrated(tmp_path):
    path = _old_store(str(tmp_path))
    assert fake.list_hosts(str(tmp_path)) == ['h1']
    drv = fake.FakeDriver(state_dir=str(tmp_path))
    drv.init_host('h1')
    assert not os.path.exists(path)
    assert drv.get_domain(UUID) == DomainInfo(UUID, power.RUNNING, None)
    with pytest.raises(VirtError, match='injected fault'):
        drv.pause(UUID)
    drv.store.clear_faults()
    drv.pause(UUID)
    assert drv.domain_record(UUID)['seq'] == 8
    assert fake.list_hosts(str(tmp_path)) == ['h1']


def test_an_old_store_beside_a_new_one_is_refused_by_name(tmp_path):
    drv = fake.FakeDriver(state_dir=str(tmp_path))
    drv.init_host('h1')
    path = _old_store(str(tmp_path))
    with pytest.raises(VirtError, match=path):
        fake.HostStore(str(tmp_path), 'h1').read()
    assert os.path.exists(path)


def test_a_write_cut_short_leaves_no_temporary_file(drv, monkeypatch):
    """The disk fills up while a staged file is written: the error goes
    up, every file is as it was and the half-written one is gone."""
    spawn(drv)
    record = drv.domain_record(UUID)
    real_write = os.write

    def full(fd, data):
        real_write(fd, bytes(data[:5]))
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(os, 'write', full)
    with pytest.raises(OSError, match='No space'):
        drv.pause(UUID)
    monkeypatch.undo()
    assert drv.domain_record(UUID) == record
    for directory in (drv.store.dir, drv.store.domains_dir):
        assert not [n for n in os.listdir(directory) if n.endswith('.tmp')]


def test_a_temporary_file_left_by_a_dead_writer_is_written_over(drv):
    spawn(drv)
    stale = os.path.join(drv.store.domains_dir,
                         '.%s.json.%d.tmp' % (UUID, os.getpid()))
    with open(stale, 'w') as f:
        f.write('{"half a record": ' * 100)
    drv.pause(UUID)
    assert drv.get_domain(UUID).power_state == power.PAUSED
    assert not os.path.exists(stale)
