"""A malformed ``[conductor] flavors`` entry was accepted at start.

``tiny:1:512`` (no disk) passed oslo.config, whose ListOpt takes any
string; the daemons started, and then every ``GET /flavors`` and every
create answered 400 to users (issue 20, item 14, found trying the
configuration as an operator). Likewise ``[conductor] task_timeouts =
build:abc`` would have broken the reaper at its first run. Fixed: a daemon
checks every entry at start (:func:`common.confcheck.value_problems`) and
refuses to start, one line per problem, as it does for the options
oslo.config types itself.
"""

import pytest

from tests import support


def test_a_malformed_flavor_stops_the_start_one_line_per_entry(tmp_path):
    with pytest.raises(SystemExit) as stop:
        support.prepare(tmp_path, '[conductor]\n'
                        'flavors = tiny:1:512,small:1:2048:20,big:x:1:1,'
                        'small:2:4096:40\n'
                        'task_timeouts = build:abc,bild:60\n')
    lines = str(stop.value.code).splitlines()
    assert 'invalid configuration, nothing was started' in lines[0]
    flavors = [line for line in lines if '[conductor] flavors' in line]
    assert len(flavors) == 3, lines
    assert "'tiny:1:512'" in flavors[0]
    assert 'NAME:VCPUS:MEMORY_MB:DISK_GB' in flavors[0]
    assert "'big:x:1:1'" in flavors[1]
    assert 'small is defined twice' in flavors[2]
    timeouts = [line for line in lines if 'task_timeouts' in line]
    assert len(timeouts) == 2
    assert any("'bild' is not an action" in line for line in timeouts)
    assert any('build:abc: expected whole seconds' in line
               for line in timeouts)


@pytest.mark.parametrize('text, expected', [
    ('[upgrade_levels]\nconductor = one\n',
     "[upgrade_levels] conductor: 'one' is not an RPC API version"),
    ('[DEFAULT]\ntransport_url = rabit://u:secret@h:5672/\n',
     "[DEFAULT] transport_url: no oslo.messaging driver 'rabit'"),
    ('[DEFAULT]\ntransport_url = rabbit://u:secret@h:amqp/\n',
     '[DEFAULT] transport_url: not a transport URL'),
])
def test_other_values_parsed_later_are_checked_at_start_too(tmp_path, text,
                                                            expected):
    with pytest.raises(SystemExit) as stop:
        support.prepare(tmp_path, text)
    assert expected in str(stop.value.code)
    assert 'secret' not in str(stop.value.code)
