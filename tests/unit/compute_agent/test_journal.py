"""The agent's task journal (compute_agent/journal.py): what a restarted
agent finds in it is every task the previous run had not ended, even after
a crash mid-write or a second restart before the conductor was told."""

import json
import os

import pytest

from compute_agent import journal as journal_mod
from compute_agent import reporter as reporter_mod
from compute_agent.virt.driver import Capacity


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / 'agent' / 'h1-tasks.json')


def test_a_new_agent_has_no_lost_task_and_writes_nothing(path):
    journal = journal_mod.TaskJournal(path)
    assert journal.lost() == []
    assert not os.path.exists(path)


def test_the_next_run_finds_the_tasks_not_ended(path):
    journal = journal_mod.TaskJournal(path)
    journal.add('t1', 'u1', 'stop')
    journal.add('t2', 'u2', 'build')
    journal.remove('t1')
    journal.close()

    assert journal_mod.read_tasks(path) == {
        't2': {'instance_uuid': 'u2', 'action': 'build'}}
    assert journal_mod.TaskJournal(path).lost() == ['t2']


def test_a_change_appends_a_line_instead_of_rewriting(path):
    journal = journal_mod.TaskJournal(path)
    journal.add('t1', 'u1', 'stop')
    inode = os.stat(path).st_ino
    journal.add('t2', 'u2', 'stop')
    journal.remove('t1')
    assert os.stat(path).st_ino == inode
    with open(path) as f:
        assert [json.loads(line) for line in f] == [
            {'add': 't1', 'instance_uuid': 'u1', 'action': 'stop'},
            {'add': 't2', 'instance_uuid': 'u2', 'action': 'stop'},
            {'remove': 't1'}]


def test_a_line_cut_short_by_a_crash_is_ignored(path):
    journal = journal_mod.TaskJournal(path)
    journal.add('t1', 'u1', 'stop')
    journal.add('t2', 'u2', 'stop')
    journal.close()
    with open(path, 'a') as f:
        f.write('{"remove": "t1"')            # killed mid-write

    assert sorted(journal_mod.TaskJournal(path).lost()) == ['t1', 't2']


def test_lost_tasks_stay_until_the_conductor_has_them(path):
    first = journal_mod.TaskJournal(path)
    first.add('t1', 'u1', 'reboot')
    first.close()
    # the second run dies before its first heartbeat was delivered
    second = journal_mod.TaskJournal(path)
    assert second.lost() == ['t1']
    second.close()

    third = journal_mod.TaskJournal(path)
    assert third.lost() == ['t1']
    third.forget_lost(['t1'])
    assert third.lost() == []
    third.close()
    assert journal_mod.TaskJournal(path).lost() == []


def test_a_lost_task_sent_again_is_this_runs(path):
    first = journal_mod.TaskJournal(path)
    first.add('t1', 'u1', 'stop')
    first.close()
    second = journal_mod.TaskJournal(path)
    second.add('t1', 'u1', 'stop')            # the conductor sent it again
    second.forget_lost(['t1'])                # a heartbeat said it was lost
    second.close()
    # it is still running here, so it is still in the journal
    assert journal_mod.read_tasks(path) == {
        't1': {'instance_uuid': 'u1', 'action': 'stop'}}


def test_the_log_is_compacted_to_what_it_holds(path, monkeypatch):
    monkeypatch.setattr(journal_mod, 'COMPACT_AFTER', 10)
    journal = journal_mod.TaskJournal(path)
    journal.add('kept', 'u0', 'stop')
    for n in range(30):
        journal.add('t%d' % n, 'u%d' % n, 'build')
        journal.remove('t%d' % n)
    with open(path) as f:
        assert len(f.readlines()) <= 10
    journal.close()
    assert journal_mod.read_tasks(path) == {
        'kept': {'instance_uuid': 'u0', 'action': 'stop'}}


def test_a_change_after_close_is_still_written(path):
    journal = journal_mod.TaskJournal(path)
    journal.add('t1', 'u1', 'stop')
    journal.close()                 # the agent stopped; the task ends late
    journal.remove('t1')
    assert journal_mod.read_tasks(path) == {}


def test_the_whole_file_form_of_earlier_agents_is_read(path):
    os.makedirs(os.path.dirname(path))
    with open(path, 'w') as f:
        json.dump({'t1': {'instance_uuid': 'u1', 'action': 'stop'}}, f)

    journal = journal_mod.TaskJournal(path)
    assert journal.lost() == ['t1']
    journal.add('t2', 'u2', 'build')
    journal.close()
    assert set(journal_mod.read_tasks(path)) == {'t1', 't2'}


class _Host:
    def get_capacity(self):
        return Capacity(4, 4096, 40)


class _Conductor:
    """Answers heartbeats once ``up``; records the lost tasks of each."""

    def __init__(self):
        self.up = False
        self.told = []

    def heartbeat(self, ctx, **kwargs):
        self.told.append(kwargs['lost_tasks'])
        if not self.up:
            raise ConnectionError('conductor away')
        return {}


def test_a_heartbeat_not_delivered_keeps_the_lost_tasks(path):
    first = journal_mod.TaskJournal(path)
    first.add('t1', 'u1', 'stop')
    first.close()
    journal = journal_mod.TaskJournal(path)
    conductor = _Conductor()
    rep = reporter_mod.Reporter(host='h1', driver=_Host(), conductor=conductor,
                                conf=None, journal=journal)

    assert rep.heartbeat() is False
    assert journal_mod.TaskJournal(path).lost() == ['t1']   # a restart now
    conductor.up = True
    assert rep.heartbeat() is True
    assert rep.heartbeat() is True
    assert conductor.told == [['t1'], ['t1'], []]
    assert journal_mod.read_tasks(path) == {}
