"""``tristate-fakevirt`` changes the fake hypervisor from outside
(compute_agent/cmd/fakevirt.py)."""

import pytest

from common.states import power
from compute_agent.cmd import fakevirt
from compute_agent.virt import driver
from compute_agent.virt import fake
from compute_agent.virt.driver import VirtError

UUID = 'aaaaaaaa-0000-0000-0000-000000000001'
FLAVOR = driver.Flavor('m1.tiny', 1, 512, 1)


@pytest.fixture
def drv(tmp_path):
    d = fake.FakeDriver(state_dir=str(tmp_path))
    d.init_host('h1')
    d.spawn(UUID, name='web-1', flavor=FLAVOR, image_ref='img')
    yield d
    d.cleanup_host()


def run(drv, *argv):
    return fakevirt.main(['--state-dir', drv.state_dir, *argv])


def state(drv):
    info = drv.get_domain(UUID)
    return None if info is None else (info.power_state, info.reason)


@pytest.mark.parametrize('command,expected', [
    ('guest-shutdown', (power.SHUTDOWN, 'guest')),
    ('crash', (power.CRASHED, 'crashed')),
    ('vanish', None),
])
def test_outside_actions_change_the_domain(drv, capsys, command, expected):
    assert run(drv, command, UUID) == 0
    assert state(drv) == expected
    out = capsys.readouterr().out
    assert out.count('\n') == 1 and UUID in out and 'h1' in out


def test_start_runs_a_stopped_domain_behind_the_agents_back(drv, capsys):
    drv.power_off(UUID)
    assert run(drv, 'start', UUID) == 0
    assert state(drv) == (power.RUNNING, None)
    assert drv.domain_record(UUID)['last_op'] == 'start'
    assert 'RUNNING' in capsys.readouterr().out


def test_an_outside_action_bumps_seq(drv):
    seq = drv.domain_record(UUID)['seq']
    run(drv, 'crash', UUID)
    assert drv.domain_record(UUID)['seq'] > seq


def test_unknown_uuid_is_a_clear_error(drv, capsys):
    assert run(drv, 'crash', 'no-such-uuid') == 1
    captured = capsys.readouterr()
    assert captured.out == ''
    assert 'no-such-uuid' in captured.err
    assert fake.store_dir(drv.state_dir) in captured.err


def test_the_uuid_is_found_on_any_host(drv, tmp_path):
    other = fake.FakeDriver(state_dir=str(tmp_path))
    other.init_host('h2')
    other.spawn('on-h2', name='db-1', flavor=FLAVOR, image_ref='img')
    assert run(drv, 'guest-shutdown', 'on-h2') == 0
    assert other.get_domain('on-h2').power_state == power.SHUTDOWN
    assert state(drv) == (power.RUNNING, None)


def test_list_prints_a_table_of_every_domain(drv, capsys):
    drv.power_off(UUID)
    run(drv, 'guest-shutdown', UUID)
    capsys.readouterr()
    assert run(drv, 'list') == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ['HOST', 'UUID', 'NAME', 'POWER', 'REASON',
                                'FLAVOR']
    assert lines[1].split() == ['h1', UUID, 'web-1', 'SHUTDOWN', 'guest',
                                'm1.tiny']
    assert len(lines) == 2


def test_fault_and_clear_faults(drv, capsys):
    assert run(drv, 'fault', 'h1', 'pause', 'fail', '--count', '1') == 0
    assert 'pause' in capsys.readouterr().out
    run(drv, 'list')
    assert 'fault on h1: pause fail (remaining 1)' in capsys.readouterr().out
    assert run(drv, 'fault', 'h1', 'unpause', 'fail') == 0
    with pytest.raises(VirtError):
        drv.pause(UUID)
    drv.pause(UUID)
    with pytest.raises(VirtError):
        drv.unpause(UUID)
    assert run(drv, 'clear-faults', 'h1') == 0
    assert '2 fault(s) cleared' in capsys.readouterr().out
    drv.unpause(UUID)


def test_a_bad_fault_count_is_an_error(drv, capsys):
    assert run(drv, 'fault', 'h1', 'pause', 'fail', '--count', '0') == 1
    assert 'count' in capsys.readouterr().err


def test_an_unknown_operation_is_a_usage_error(drv):
    with pytest.raises(SystemExit) as exc:
        run(drv, 'fault', 'h1', 'fly', 'fail')
    assert exc.value.code == 2


def test_state_dir_comes_from_the_config_file(drv, tmp_path, capsys):
    conf_file = tmp_path / 'tristate.conf'
    conf_file.write_text('[DEFAULT]\nstate_dir = %s\n' % drv.state_dir)
    assert fakevirt.main(['--config-file', str(conf_file), 'crash', UUID]) == 0
    assert state(drv) == (power.CRASHED, 'crashed')


def test_state_dir_option_overrides_the_config_file(drv, tmp_path, capsys):
    conf_file = tmp_path / 'tristate.conf'
    conf_file.write_text('[DEFAULT]\nstate_dir = %s\n' % (tmp_path / 'none'))
    assert fakevirt.main(['--config-file', str(conf_file), '--state-dir',
                          drv.state_dir, 'crash', UUID]) == 0
    assert state(drv) == (power.CRASHED, 'crashed')
