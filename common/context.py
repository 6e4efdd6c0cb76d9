"""The RequestContext: who asks, in which request, for which task.

Built on oslo.context and extended with ``task_id`` (DESIGN.md section 3): the
id claimed for the task travels inside the context of every RPC message of
that task, and every write the task makes is guarded by it. ``to_dict`` and
``from_dict`` round-trip every field, so a context survives the bus intact.

Log lines: :data:`LOG_CONTEXT_FORMAT` (oslo.log's default plus the task_id)
is the default of ``logging_context_format_string`` in every daemon, so a
line logged while a context is current (the API's request, an RPC message,
a task the gateway claimed or ended) carries the request_id, the task_id
and, for a task, ``[instance: UUID]``: one grep follows a task from the API
through the conductor to the agent. oslo.context masks the auth token.
"""

import copy

from oslo_context import context as oslo_context

from common import logescape

SYSTEM_USER = 'tristate-system'
LOG_CONTEXT_FORMAT = (
    '%(asctime)s.%(msecs)03d %(process)d %(levelname)s %(name)s '
    '[%(global_request_id)s %(request_id)s %(user_identity)s] '
    '[task: %(task_id)s] %(instance)s%(message)s')


def set_log_defaults():
    """Make :data:`LOG_CONTEXT_FORMAT` oslo.log's default (before parsing
    the configuration; a config file can still set its own), and escape
    control characters in every log record's arguments
    (:mod:`common.logescape`)."""
    from oslo_log import log as oslo_log
    oslo_log.set_defaults(logging_context_format_string=LOG_CONTEXT_FORMAT)
    logescape.install()


class RequestContext(oslo_context.RequestContext):
    """oslo.context's RequestContext plus the task it works for."""

    def __init__(self, *args, task_id=None, **kwargs):
        kwargs.setdefault('overwrite', False)
        super().__init__(*args, **kwargs)
        self.task_id = task_id

    def to_dict(self):
        values = super().to_dict()
        values.update({
            'task_id': self.task_id,
            'user_name': self.user_name,
            'project_name': self.project_name,
        })
        return values

    def get_logging_values(self):
        values = super().get_logging_values()
        values['task_id'] = self.task_id or '-'
        # A user name can be what a caller chose (noauth's token).
        return {key: logescape.safe(value) if isinstance(value, str)
                else value for key, value in values.items()}

    @classmethod
    def from_dict(cls, values, **kwargs):
        kwargs.setdefault('task_id', values.get('task_id'))
        return super().from_dict(values, **kwargs)

    def for_task(self, task_id):
        """A copy of this context that works for ``task_id``."""
        ctx = copy.copy(self)
        ctx.task_id = task_id
        return ctx

    def elevated(self):
        """A copy with admin rights, same user and request ids."""
        ctx = copy.copy(self)
        ctx.is_admin = True
        ctx.roles = sorted(set(ctx.roles or []) | {'admin'})
        return ctx

    @property
    def who(self):
        """How the action log names the requester."""
        return '%s/%s' % (self.user_id or '-', self.project_id or '-')


def get_admin_context(task_id=None):
    """The context of Tristate's own work (reconcile, reaper, reclaim)."""
    return RequestContext(user_id=SYSTEM_USER, project_id=SYSTEM_USER,
                          is_admin=True, roles=['admin'], task_id=task_id)
