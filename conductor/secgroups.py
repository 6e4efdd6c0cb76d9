"""The ``set_security_groups`` task (Nova's addSecurityGroup and
removeSecurityGroup, issue 22): every port of a guest into the ``default``
group or into none (:mod:`common.secgroups` says what each means).

The request names the groups the ports are to be in (``[]`` or
``["default"]``). Prepared here: the instance's ports as they are stored,
with those groups (a guest with no port has no groups to change: Nova's 404,
before any claim). Started by :mod:`conductor.flows` once claimed:

* a guest with a host (ACTIVE, STOPPED, PAUSED, SHELVED) gets the task on
  its agent, which sets its cards' links (live and in its definition) and
  answers with the groups; the finish stores them on the ports in its
  transaction (:meth:`SecurityGroups.success_values`). A failure leaves
  the ports as they were (the agent put the links back) or the instance in
  ERROR (it could not), as any task; a silent agent's task is reaped.
* an offloaded guest has no domain anywhere: the ports change alone, and
  the task ends at once. Its next build (unshelve) carries them.
"""

import logging

from common import exception
from common import secgroups

LOG = logging.getLogger(__name__)

ACTION = 'set_security_groups'


def groups_param(params):
    """The request's ``security_groups``, checked: ``[]`` or
    ``["default"]``."""
    groups = params.get('security_groups')
    if groups not in ([], [secgroups.DEFAULT]):
        raise exception.Invalid(
            reason='%s takes security_groups [] or [%r], not %r'
            % (ACTION, secgroups.DEFAULT, groups))
    return list(groups)


class SecurityGroups:
    """The conductor's part of :data:`ACTION`, for :mod:`conductor.flows`."""

    def __init__(self, flows):
        self.flows = flows
        self.db = flows.db

    def prepare(self, ctx, inst, prepared):
        """The task's parameters: its groups and the instance's ports in
        them. A guest with no port: Nova's 404; an agent that cannot take
        the task: a 503 before the claim."""
        groups = groups_param(prepared)
        ports = self.db.ports_of(inst['uuid'])
        if not ports:
            raise exception.NotFound(
                'instance_id %s could not be found as device id on any '
                'ports' % inst['uuid'])
        if inst['host'] is not None and not self.flows.compute.can_send(
                '1.13'):
            raise exception.ServiceUnavailable(
                reason='%s needs compute agent RPC API 1.13 ([upgrade_levels]'
                       ' compute caps it lower)' % ACTION)
        return {'security_groups': groups,
                'ports': secgroups.with_groups(ports, groups)}

    def start(self, task_ctx, inst, prepared):
        """Send the claimed task to the guest's host, or, with no host,
        end it here with the ports changed."""
        if inst['host'] is not None:
            self.flows.send(task_ctx, inst['host'], inst, ACTION, prepared)
            return
        groups = prepared['security_groups']

        def derive(conn, row):
            return self.success_values(conn, row, {'security_groups':
                                                   groups}), []
        self.flows.gateway.finish(task_ctx, inst['uuid'], derive=derive)

    def success_values(self, conn, inst, values):
        """In the finish's transaction: the ports in the groups the task
        set (the agent's answer, checked). No instance column changes."""
        try:
            groups = groups_param(values)
        except exception.Invalid:
            # not from an agent of RPC 1.13: what it set is unknown
            LOG.error('The %s task of instance %s ended without the groups '
                      'it set (%r): its ports are left as they were',
                      ACTION, inst['uuid'], values)
            return {}
        self.db._set_security_groups(conn, inst['uuid'], groups)
        return {}
