"""Getting each task to its agent: sent until accepted, run once.

A cast to an agent is lost without a trace when its queue is not there: a
broker restarted under the daemons drops every queue, and an agent's
listener may come back seconds after the conductor's. So a task is sent as
a *call* that the agent answers as soon as it has noted the task in its
journal (the task then runs in a thread of its own). No answer within
``[conductor] task_delivery_timeout``: the task is sent again, with the
same task_id, from a thread of this conductor, for as long as the instance
still holds that task (the reaper ends a task no one ever accepted, at its
action's timeout). The agent answers a task it already has, or has ended,
without running it again. An agent capped at compute RPC 1.0 gets a cast,
as before.

A task whose flow lost the database after the claim and before the send
(scheduling, allocating) never reaches an agent, and its failure cannot be
written now: :meth:`Delivery.fail_later` writes it from a thread as soon as
the database answers again, so the instance is not held until the reaper's
timeout (up to an hour) while the request answers 503.
"""

import logging
import threading
import time

from common import actions
from common import exception
from common import rpc
from conductor import results

LOG = logging.getLogger(__name__)

# Seconds between two sends when the bus refuses the message outright.
REFUSED_BACKOFF = (0.5, 5.0)


class Delivery:
    def __init__(self, *, compute, gateway, conf):
        self.compute = compute
        self.gateway = gateway
        self.db = gateway.db
        self.conf = conf
        self._stop = threading.Event()

    @property
    def timeout(self):
        return self.conf.conductor.task_delivery_timeout

    def send(self, task_ctx, host, payload, action, params, *,
             claimed=None):
        """Send a task; the first try in this thread, later ones in the
        background. A message the bus refuses fails the task, settled as
        the table's action ``claimed`` (default: ``action``; an
        evacuation sends a build)."""
        try:
            self._send_once(task_ctx, host, payload, action, params)
            return
        except rpc.MessagingTimeout:
            LOG.warning('The agent of host %s did not accept task %s (%s of '
                        'instance %s) within %.1f s; sending it again until '
                        'it does', host, task_ctx.task_id, action,
                        payload['uuid'], self.timeout)
        except Exception as err:       # the bus refused the message
            LOG.warning('Could not send %s of instance %s to host %s: %s',
                        action, payload['uuid'], host, err)
            self.gateway.fail_quietly(
                task_ctx, payload['uuid'], rolled_back=True,
                error='could not send the task to host %s: %s' % (host, err),
                settle=results.settle_on_failure(claimed or action))
            return
        threading.Thread(
            target=self._resend, args=(task_ctx, host, payload, action, params),
            name='resend-%s' % task_ctx.task_id, daemon=True).start()

    def _send_once(self, task_ctx, host, payload, action, params):
        answer = self.compute.run_task(task_ctx, host=host, instance=payload,
                                       action=action, params=params,
                                       timeout=self.timeout)
        if answer is not None:
            LOG.debug('Task %s on host %s: %s', task_ctx.task_id, host, answer)

    def still_current(self, task_ctx, instance_uuid):
        try:
            inst = self.db.get_instance(instance_uuid)
        except exception.InstanceNotFound:
            return False
        return inst['task_id'] == task_ctx.task_id

    def _resend(self, task_ctx, host, payload, action, params):
        task_ctx.update_store()
        tries, backoff = 1, REFUSED_BACKOFF[0]
        while not self._stop.is_set():
            try:
                if not self.still_current(task_ctx, payload['uuid']):
                    LOG.info('Task %s ended before its agent accepted it; not '
                             'sent again', task_ctx.task_id)
                    return
                tries += 1
                self._send_once(task_ctx, host, payload, action, params)
            except rpc.MessagingTimeout:
                continue            # the call itself waited: try again now
            except Exception as err:    # bus or database unavailable
                LOG.warning('Sending task %s to host %s again failed (%s); '
                            'next try in %.1f s', task_ctx.task_id, host, err,
                            backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, REFUSED_BACKOFF[1])
                continue
            LOG.info('Task %s (%s) accepted by host %s after %d sends',
                     task_ctx.task_id, action, host, tries)
            return

    def fail_later(self, task_ctx, instance_uuid, action, vm_state, err):
        """End a task that was claimed but never sent, once the database
        answers; tries with a capped backoff until the action's timeout,
        after which the reaper ends it."""
        # The driver's text (it can name the database server) goes to the
        # log only: the action log's message is shown to the project.
        LOG.warning('Task %s (%s) on instance %s was not sent: %s; it is '
                    'failed when the database answers again',
                    task_ctx.task_id, action, instance_uuid, err)
        error = ('the database became unavailable before the task reached '
                 'its agent')
        threading.Thread(
            target=self._fail_when_back,
            args=(task_ctx, instance_uuid, error,
                  results.settle_on_failure(action, vm_state),
                  time.monotonic() + actions.TABLE.timeout(
                      action, self.conf.conductor.task_timeouts)),
            name='unsent-%s' % task_ctx.task_id, daemon=True).start()

    def _fail_when_back(self, task_ctx, instance_uuid, error, settle,
                        deadline):
        task_ctx.update_store()
        backoff = REFUSED_BACKOFF[0]
        while not self._stop.is_set():
            try:
                self.gateway.fail_quietly(task_ctx, instance_uuid, error=error,
                                          rolled_back=True, settle=settle)
                return
            except exception.DBUnavailable as err:
                if time.monotonic() + backoff > deadline:
                    LOG.warning('Task %s not ended (%s); the reaper will end '
                                'it', task_ctx.task_id, err)
                    return
                LOG.warning('Task %s, never sent, cannot be ended yet (%s); '
                            'next try in %.1f s', task_ctx.task_id, err,
                            backoff)
            self._stop.wait(backoff)
            backoff = min(backoff * 2, REFUSED_BACKOFF[1])

    def stop(self):
        self._stop.set()
