"""The default rules: own project, admin for the table's admin-only actions."""

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
