"""The same_host / different_host scheduler hints in the scheduler (issue
22, common/db/host_hints.py), over three fake hosts: a build lands on a
named server's host or off every named server's host, against the spread
weigher; a build no host satisfies is buried with a reason naming the
hint; a server that does not exist, or is another project's, is on no
host; a live migration honours the hints the create gave."""

import uuid as uuidlib

import pytest

from common import context
from common import exception
from common.states import vm
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import Planes
from tests.functional.conftest import build
from tests.functional.conftest import new_conf
from tests.functional.conftest import summary


@pytest.fixture(scope='module')
def plane3(tmp_path_factory):
    conf = new_conf(tmp_path_factory.mktemp('plane'))
    planes = Planes(conf)
    yield planes.start(hosts=3)
    planes.stop_all()
    conf.reset()


@pytest.fixture
def clean(plane3):
    yield plane3
    system = context.get_admin_context()
    for inst in plane3.statedb.list_instances():
        plane3.client.delete_instance(system, inst['uuid'])


def _hinted(plane, ctx, **hints):
    return build(plane, ctx, attributes={'scheduler_hints': hints})


def _reason(plane, inst):
    return plane.statedb.list_actions(inst['uuid'])[-1]['message']


def test_same_host_lands_beside_the_named_server(clean, ctx):
    first = active(clean, ctx)
    # the spread weigher alone would take an empty host
    for _ in range(2):
        beside = _hinted(clean, ctx, same_host=[first['uuid']])
        assert beside['host'] == first['host'], summary(beside)
    other = active(clean, ctx)
    assert other['host'] != first['host']
    # any of the named servers' hosts will do
    either = _hinted(clean, ctx, same_host=[other['uuid'], first['uuid']])
    assert either['host'] in {first['host'], other['host']}
    assert clean.statedb.get_instance(either['uuid'])['scheduler_hints'] == {
        'same_host': [other['uuid'], first['uuid']]}


def test_different_host_avoids_every_named_server(clean, ctx):
    one = active(clean, ctx)
    two = _hinted(clean, ctx, different_host=[one['uuid']])
    assert two['vm_state'] == vm.ACTIVE and two['host'] != one['host']
    three = _hinted(clean, ctx, different_host=[one['uuid'], two['uuid']])
    assert three['vm_state'] == vm.ACTIVE, summary(three)
    assert three['host'] not in {one['host'], two['host']}
    # every host holds a named server: buried, the reason names the hint
    none = _hinted(clean, ctx, different_host=[
        one['uuid'], two['uuid'], three['uuid']])
    assert (none['vm_state'], none['host']) == (vm.ERROR, None)
    reason = _reason(clean, none)
    assert 'no host satisfies different_host' in reason, reason
    assert one['uuid'] in reason and one['host'] in reason, reason
    assert clean.statedb.list_allocations(instance_uuid=none['uuid']) == []


def test_both_hints_contradicting_bury(clean, ctx):
    one = active(clean, ctx)
    none = _hinted(clean, ctx, same_host=[one['uuid']],
                   different_host=[one['uuid']])
    assert none['vm_state'] == vm.ERROR
    reason = _reason(clean, none)
    assert 'same_host' in reason and 'different_host' in reason, reason


def test_a_server_that_is_not_there_is_on_no_host(clean, ctx):
    ghost = str(uuidlib.uuid4())
    assert _hinted(clean, ctx, different_host=[ghost])['vm_state'] == (
        vm.ACTIVE)
    buried = _hinted(clean, ctx, same_host=[ghost])
    assert buried['vm_state'] == vm.ERROR
    reason = _reason(clean, buried)
    assert ('no host satisfies same_host %s (none of them is on a host)'
            % ghost) in reason, reason
    # deleted: the same
    gone = active(clean, ctx)
    clean.client.delete_instance(ctx, gone['uuid'])
    assert _hinted(clean, ctx, same_host=[gone['uuid']])['vm_state'] == (
        vm.ERROR)


def test_another_projects_server_does_not_count(clean, ctx):
    """No one lands beside (or learns the host of) another project's
    server by naming its uuid."""
    theirs = active(clean, context.RequestContext(
        user_id='mallory', project_id='other', roles=['member']))
    assert _hinted(clean, ctx, same_host=[theirs['uuid']])['vm_state'] == (
        vm.ERROR)


def test_live_migration_honours_the_hints(clean, ctx):
    admin = ctx.elevated()
    one = active(clean, ctx)
    two = _hinted(clean, ctx, different_host=[one['uuid']])
    free = ({h for h in clean.host_names}
            - {one['host'], two['host']}).pop()
    # the one host left is the scheduler's only choice
    moved = act(clean, admin, two['uuid'], 'live_migrate')
    assert (moved['vm_state'], moved['host']) == (vm.ACTIVE, free)
    # a host the hint forbids is refused, and the server stays
    stays = act(clean, admin, two['uuid'], 'live_migrate', host=one['host'])
    assert (stays['vm_state'], stays['host']) == (vm.ACTIVE, free)
    reason = _reason(clean, stays)
    assert reason.endswith('no host satisfies different_host %s (on %s)'
                           % (one['uuid'], one['host'])), reason


def test_bad_hints_over_the_bus_are_refused(clean, ctx):
    for hints in ({'same_host': 'x'}, {'same_host': ['nope']},
                  {'query': ['x']}, {'different_host': [1]}):
        with pytest.raises(exception.Invalid, match='scheduler_hints'):
            clean.client.create_instance(
                ctx, name='vm', flavor='tiny', image_ref='cirros',
                attributes={'scheduler_hints': hints})
    assert clean.statedb.list_instances() == []
