"""Consoles (issue 24), the conductor's part: a guest's console log read
from the agent that hosts it, and the one-time tokens of interactive
consoles (:mod:`common.db.consoles`).

The API tier asks here (conductor RPC 1.11) rather than calling agents
itself: DESIGN.md section 8, the API tier talks to the conductors only.
``tristate-console-proxy`` consumes tokens here and asks, every
``[serial_console] session_check_interval``, which of its sessions'
instances still exist: a hard delete (a database UPDATE that may be made
by the API tier itself, with no bus) needs nobody to tell the proxy, and
the proxy closes a session at most one interval after the delete.
"""

import logging

from common import exception
from common import rpc
from common.db import api as db_api
from common.db import consoles as tokens
from common.states import vm

LOG = logging.getLogger(__name__)
SERIAL = 'serial'
# How long the conductor waits for an agent's answer, in seconds: a read of
# a file or of a domain's XML, well under the API tier's own wait.
AGENT_TIMEOUT = 10


# Nova's messages (the exceptions are common/exception.py's, which the API
# tier rebuilds from the conductor's answer).
NO_CONSOLE = 'Guest does not have a console available.'
UNAVAILABLE = 'Unavailable console type %s.'
NOT_READY = 'Instance %s is not ready'


class Consoles:
    def __init__(self, *, db, compute, conf):
        self.db = db
        self.compute = compute
        self.conf = conf

    def _placed(self, ctx, instance_uuid):
        inst = db_api.check_owner(ctx, self.db.get_instance(instance_uuid))
        if inst['vm_state'] == vm.HARD_DELETED:
            raise exception.InstanceNotFound(instance=instance_uuid)
        if not inst.get('host'):
            raise exception.Conflict(NOT_READY % instance_uuid)
        return inst

    def _ask(self, ctx, method, inst, **kwargs):
        try:
            return getattr(self.compute, method)(
                ctx, host=inst['host'], instance_uuid=inst['uuid'],
                timeout=AGENT_TIMEOUT, **kwargs)
        except rpc.MessagingException as err:
            LOG.warning('%s of %s: the agent of host %s did not answer: %s',
                        method, inst['uuid'], inst['host'], err)
            raise exception.ServiceUnavailable(
                reason='the compute agent of host %s did not answer'
                       % inst['host']) from None

    def output(self, ctx, instance_uuid):
        """The end of the guest's console log (at most ``[serial_console]
        output_max_bytes``)."""
        inst = self._placed(ctx, instance_uuid)
        text = self._ask(ctx, 'get_console_output', inst,
                         max_bytes=self.conf.serial_console.output_max_bytes)
        if text is None:
            raise exception.NotFound(NO_CONSOLE)
        return text

    def create_token(self, ctx, instance_uuid, console_type):
        """``{'token', 'expires_at'}`` of a new one-time token opening the
        instance's serial console."""
        if console_type != SERIAL:
            raise exception.Invalid(UNAVAILABLE % console_type)
        inst = self._placed(ctx, instance_uuid)
        endpoint = self._ask(ctx, 'get_console_endpoint', inst)
        if endpoint is None:
            raise exception.Invalid(UNAVAILABLE % console_type)
        return tokens.create(
            self.db.db, instance=inst, console_type=console_type,
            endpoint=endpoint, ttl=self.conf.serial_console.token_ttl,
            now=self.db.clock())

    def consume_token(self, ctx, token):
        _service_only(ctx, 'consuming a console token')
        return tokens.consume(self.db.db, token, self.db.clock())

    def alive(self, ctx, instance_uuids):
        _service_only(ctx, 'checking console sessions')
        return tokens.alive(self.db.db, instance_uuids)

    def forget(self, instance_uuid):
        try:
            tokens.forget(self.db.db, instance_uuid)
        except Exception:       # they cannot be used anyway (see consume)
            LOG.warning('Could not remove the console tokens of deleted '
                        'instance %s', instance_uuid, exc_info=True)


def _service_only(ctx, what):
    if not ctx.is_admin:
        raise exception.Forbidden(action='%s (the console proxy only)'
                                  % what)
