"""The default rules: own project, admin for the table's admin-only actions."""

import os
import time

import pytest
from oslo_config import cfg

from api import policy
from common import actions as table
from common import context
from common import exception


@pytest.fixture
def rules():
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    return policy.Policy(conf)


def _ctx(user, project):
    admin = user == 'admin'
    return context.RequestContext(user_id=user, project_id=project,
                                  is_admin=admin,
                                  roles=['admin'] if admin else ['member'])


def test_every_user_action_of_the_table_has_a_rule():
    names = {r.name for r in policy.list_rules()}
    for action in table.ACTIONS.values():
        if action.system or action.name in ('build', 'delete'):
            continue
        assert policy.SERVERS % 'action:%s' % action.name in names


@pytest.mark.parametrize('action', [a for a in table.ACTIONS.values()
                                    if not a.system
                                    and a.name not in ('build', 'delete')],
                         ids=lambda a: a.name)
def test_admin_only_actions_need_admin(rules, action):
    rule = policy.SERVERS % 'action:%s' % action.name
    own = {'project_id': 'p1'}
    assert rules.allows(_ctx('admin', 'other'), rule, own)
    assert rules.allows(_ctx('alice', 'p1'), rule, own) != action.admin_only
    assert not rules.allows(_ctx('bob', 'p2'), rule, own)


def test_reads_and_hosts(rules):
    alice = _ctx('alice', 'p1')
    assert rules.allows(alice, 'tristate:servers:index')
    assert not rules.allows(alice, 'tristate:servers:index:all_tenants')
    assert not rules.allows(alice, 'tristate:hypervisors:index')
    assert rules.allows(_ctx('admin', 'admin'), 'tristate:hypervisors:index')
    with pytest.raises(exception.Forbidden) as err:
        rules.authorize(alice, 'tristate:hypervisors:index')
    assert err.value.code == 403
    assert 'tristate:hypervisors:index' in err.value.message


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _policy_file(tmp_path, text):
    path = tmp_path / 'policy.yaml'
    path.write_text(text)
    conf_file = tmp_path / 'tristate.conf'
    conf_file.write_text('[oslo_policy]\npolicy_file = %s\n' % path)
    conf = cfg.ConfigOpts()
    conf(['--config-file', str(conf_file)], default_config_files=[])
    return path, conf


def test_an_edited_policy_file_applies_once_the_memory_ends(tmp_path):
    """Decisions are remembered for a second at most: a rule tightened in
    the policy file refuses from then on, and a remembered refusal is a
    403 like the first."""
    path, conf = _policy_file(tmp_path, '{}\n')
    clock = _Clock()
    rules = policy.Policy(conf, memory=1.0, clock=clock)
    alice = _ctx('alice', 'p1')
    own = {'project_id': 'p1'}
    assert rules.allows(alice, 'tristate:servers:delete', own)
    path.write_text('"tristate:servers:delete": "rule:context_is_admin"\n')
    later = time.time() + 10        # a newer mtime, whatever its granularity
    os.utime(path, (later, later))
    clock.now += 0.5
    assert rules.allows(alice, 'tristate:servers:delete', own)
    clock.now += 0.6
    assert not rules.allows(alice, 'tristate:servers:delete', own)
    with pytest.raises(exception.Forbidden) as err:
        rules.authorize(alice, 'tristate:servers:delete', own)
    assert 'tristate:servers:delete' in err.value.message


def test_a_decision_is_remembered_per_caller_and_target(rules):
    """The memory never lends one caller's or one target's answer to
    another: bob is refused alice's server right after alice was allowed."""
    alice, bob = _ctx('alice', 'p1'), _ctx('bob', 'p2')
    own = {'project_id': 'p1'}
    for _ in range(2):
        assert rules.allows(alice, 'tristate:servers:delete', own)
        assert not rules.allows(bob, 'tristate:servers:delete', own)
        assert rules.allows(bob, 'tristate:servers:delete',
                            {'project_id': 'p2'})
