"""The compute agent's RPC endpoint: runs the tasks the conductor sends.

For each task: note it in the journal, answer the conductor that the task is
accepted (the conductor sends a task again until some agent answers, so a
message lost with a restarted broker is sent again, and a task received twice
runs once), then, in a thread of its own, check with a first progress
report that the task still holds the instance (a copy that arrives after the
task ended is dropped), run the driver calls of its action
(:mod:`compute_agent.tasks`), report progress, and report the result until a
conductor records it. A task the conductor says was preempted (the instance
was hard-deleted) stops at once and destroys what it made. The target
version must match :data:`compute_agent.rpcapi.VERSION` (a test checks).

Sending a result again helps only when the failure was the bus's or the
conductor's (down, timed out, database unavailable). A result that can
never be delivered (it cannot be encoded as UTF-8 JSON, or the conductor
fails on the message itself: :func:`undeliverable`) is not sent again: the
task is reported failed at once, without rollback (the driver call ran),
with the reason in a form that can be sent.
"""

import collections
import json
import logging
import threading
import time

from common import exception
from common import metrics
from common import rpc
from common.images import client as image_client
from compute_agent import coldmove
from compute_agent import configdrive
from compute_agent import reporter as reporter_mod
from compute_agent import rpcapi
from compute_agent import tasks
from compute_agent.net import dhcp as dhcp_mod
from compute_agent.virt import driver as virt

LOG = logging.getLogger(__name__)

# How many finished task ids an agent remembers, to answer a task sent again
# after it ended (its first acceptance was lost) without running it twice.
REMEMBERED_TASKS = 4096
# What a conductor answers when it could not record a result now (its
# database did not answer within its retries): the result is sent again.
UNAVAILABLE = (exception.DBUnavailable,)
# What a conductor raises when the message itself is bad (it cannot store
# or read what it was sent): sending it again cannot help.
MALFORMED = (UnicodeError, TypeError, ValueError)
_MALFORMED_NAMES = frozenset(kind.__name__ for kind in (
    UnicodeError, UnicodeEncodeError, UnicodeDecodeError, TypeError,
    ValueError))
ACCEPTED = 'accepted'
DUPLICATE = 'duplicate'
SLOT_POLL = 0.5     # seconds between two looks at "stopping" while waiting
# Seconds a cold move's source waits beyond the conductor's own wait for
# the destination ([conductor] rpc_timeout).
RECEIVE_MARGIN = 30


class TaskStopped(Exception):
    """The conductor said this task no longer holds the instance."""

    def __init__(self, preempted):
        super().__init__(str(preempted))
        self.deleted = preempted.kwargs.get('deleted', False)


class Undeliverable(Exception):
    """A result no later try can deliver; the message says why."""


class AgentManager:
    target = rpc.Target(version=rpcapi.VERSION)

    def __init__(self, *, host, driver, conductor, conf, journal,
                 delivered=None, image_cache=None, dhcp=None):
        self.host = host
        self.driver = driver
        # The host's DHCP entries (compute_agent.net.dhcp), read again from
        # the domain after a task that changes its ports and a destroy.
        self.dhcp = dhcp if dhcp is not None else dhcp_mod.NoDhcp()
        self.image_cache = image_cache
        self._image_session = None      # keystoneauth's, made when needed
        # What the conductor was told of each domain's power (shared with
        # the host's Reporter): a task's result tells it too.
        self.delivered = (delivered if delivered is not None
                          else reporter_mod.Delivered())
        self.conductor = conductor
        self.conf = conf
        self.journal = journal
        self._stopping = False
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(
            conf.compute.max_concurrent_tasks)
        self._running = {}          # task_id -> thread
        self._ended = collections.OrderedDict()     # task_id -> None
        self._timed = (None, None)  # (driver, its metrics.TimedDriver)

    def timed_driver(self):
        """The driver with its calls timed (the tasks'), one for as long as
        ``self.driver`` is the same: it keeps its methods' wrappers."""
        driver, timed = self._timed
        if driver is not self.driver:
            timed = metrics.TimedDriver(self.driver, self.host)
            self._timed = (self.driver, timed)
        return timed

    # --- RPC endpoints ---------------------------------------------------------

    def run_task(self, ctx, instance, action, params):
        """Accept a task and start it; the answer says whether it was new
        (``accepted``) or already running or ended here (``duplicate``)."""
        with self._lock:
            if ctx.task_id in self._running or ctx.task_id in self._ended:
                LOG.info('Task %s (%s) received again: already %s',
                         ctx.task_id, action, 'running'
                         if ctx.task_id in self._running else 'ended')
                return DUPLICATE
            self.journal.add(ctx.task_id, instance['uuid'], action)
            thread = threading.Thread(
                target=self._task_thread, args=(ctx, instance, action, params),
                name='task-%s' % ctx.task_id, daemon=True)
            self._running[ctx.task_id] = thread
        thread.start()
        return ACCEPTED

    def _task_thread(self, ctx, instance, action, params):
        ctx.update_store()      # this thread's log lines name the task
        if not self._wait_for_slot(ctx, action):
            # The agent stops: the task stays in the journal, and is
            # reported lost (failed at once) when the agent starts again.
            return
        LOG.info('Running %s', action)
        self.delivered.task_began(instance['uuid'])
        try:
            self._run(ctx, instance, action, params,
                      tasks.HANDLERS.get(action))
        finally:
            if action in tasks.CHANGES_PORTS:
                self.dhcp.refresh_from(self.driver, instance['uuid'])
            self._slots.release()
            with self._lock:
                self.journal.remove(ctx.task_id)
                self._running.pop(ctx.task_id, None)
                self._ended[ctx.task_id] = None
                while len(self._ended) > REMEMBERED_TASKS:
                    self._ended.popitem(last=False)
            self.delivered.task_ended(instance['uuid'])

    def _wait_for_slot(self, ctx, action):
        """At most ``[compute] max_concurrent_tasks`` run at once; the
        others wait here (accepted, in the journal). False if the agent
        stops meanwhile."""
        told = False
        while not self._slots.acquire(timeout=SLOT_POLL):
            if self._stopping:
                return False
            if not told:
                LOG.info('Task %s (%s) waits: %d tasks run already '
                         '([compute] max_concurrent_tasks)', ctx.task_id,
                         action, self.conf.compute.max_concurrent_tasks)
                told = True
        return True

    def running_tasks(self):
        with self._lock:
            return list(self._running)

    def wait(self, timeout):
        """Wait up to ``timeout`` seconds for the running tasks to end;
        returns the ids of those still running."""
        deadline = time.monotonic() + timeout
        with self._lock:
            threads = list(self._running.values())
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return self.running_tasks()

    def get_console_output(self, ctx, instance_uuid, max_bytes):
        """The end of the guest's console log, as text (bytes that are
        not UTF-8 escaped), or None; read at once, no task."""
        data = self.driver.get_console_output(instance_uuid,
                                              max_bytes=int(max_bytes))
        return None if data is None else data.decode('utf-8',
                                                     'backslashreplace')

    def get_console_endpoint(self, ctx, instance_uuid):
        return self.driver.console_endpoint(instance_uuid)

    def destroy_domain(self, ctx, instance_uuid):
        LOG.info('Destroying domain %s on request', instance_uuid)
        try:
            self.driver.destroy(instance_uuid)
        finally:
            self.dhcp.refresh_from(self.driver, instance_uuid)
        configdrive.remove(self.conf, self.host, instance_uuid)

    def prepare_live_migration(self, ctx, instance, params):
        """1.6: this host as a live migration's destination
        (:func:`compute_agent.tasks.prepare_incoming`); a failure is
        raised to the conductor, which fails the task before it starts."""
        LOG.info('Preparing to receive domain %s', instance['uuid'])
        return tasks.prepare_incoming(_TaskView(self, ctx), instance,
                                      params or {})

    def receive_migration(self, ctx, instance, params):
        """1.8: this host as a cold move's destination
        (:func:`compute_agent.coldmove.receive`); a failure is raised to
        the conductor, which raises it to the source."""
        LOG.info('Receiving domain %s by cold migration', instance['uuid'])
        try:
            return coldmove.receive(_TaskView(self, ctx), instance, params)
        finally:
            self.dhcp.refresh_from(self.driver, instance['uuid'])

    def get_diagnostics(self, ctx, instance_uuid):
        """1.4: the driver's diagnostics of the domain; None when there
        is no such domain here, ``{'error': why}`` when the driver could
        not read them."""
        try:
            return self.driver.get_diagnostics(instance_uuid)
        except virt.DomainNotFound:
            return None
        except virt.VirtError as err:
            return {'error': str(err)}

    # --- running a task ------------------------------------------------------------

    def _run(self, ctx, inst, action, params, handler):
        uuid = inst['uuid']
        view = _TaskView(self, ctx)
        try:
            if handler is None:
                raise virt.NotSupported(action, 'agent')
            # A copy of a task that ended before it got here (sent again,
            # reaped, or from before this agent restarted) must not touch
            # the domain: the conductor's answer to a first progress report
            # says whether the task still holds the instance. (Handlers
            # that report a step before any change do it themselves.)
            if action not in tasks.STEP_FIRST:
                view.progress(inst, percent=0)
            handler(view, inst, params)
        except TaskStopped as stop:
            return self._stopped(inst, action, stop)
        except virt.VirtError as err:
            return self._report(ctx, 'task_failed', uuid, error=str(err),
                                rolled_back=err.rolled_back,
                                power=self._power(uuid, action),
                                **self._fault_code(err))
        except Exception as err:       # a driver bug: be safe, no rollback
            LOG.exception('Task %s (%s) on %s crashed', ctx.task_id, action,
                          uuid)
            return self._report(ctx, 'task_failed', uuid,
                                error='%s: %s' % (type(err).__name__, err),
                                rolled_back=False,
                                power=self._power(uuid, action))
        return self._report(ctx, 'task_finished', uuid,
                            power=self._power(uuid, action, params),
                            values=tasks.result_values(action, params))

    def _fault_code(self, err):
        """``{'fault_code': 400}`` for a failure that is the user's
        mistake (a missing or corrupt image: ``err.fault_code``), when the
        conductor takes one; else nothing (the fault is then a 500)."""
        code = getattr(err, 'fault_code', None)
        if code is None or not tasks.takes(self.conductor.task_failed,
                                           'fault_code'):
            return {}
        return {'fault_code': code}

    def image_session(self):
        """The keystoneauth session of ``[image]`` (a Glance behind
        Keystone), or None; made once."""
        if self._image_session is None and getattr(
                self.conf.image, 'auth_type', None):
            self._image_session = image_client.session_from_conf(self.conf)
        return self._image_session

    def _power(self, uuid, action, params=None):
        if action in tasks.LEAVES_HOST or tasks.moves_away(
                action, params or {}, self.host):
            return None
        # Read and numbered under the reporter's lock: never older than a
        # report numbered after it.
        return reporter_mod.read_domain(self.driver, uuid)

    def _report(self, ctx, method, uuid, **kwargs):
        """Send a task's result until a conductor records it; a result
        that can never be delivered ends the task failed instead."""
        try:
            why = unsendable(kwargs)
            if why is None:
                return self._send_result(ctx, method, uuid, kwargs)
        except Undeliverable as err:
            why = str(err)
        LOG.error('Result %s of task %s cannot be delivered: %s', method,
                  ctx.task_id, why)
        if kwargs.get('error', '').startswith(UNDELIVERED):
            return False        # even the failure could not be sent
        power = kwargs.get('power')
        return self._report(
            ctx, 'task_failed', uuid,
            error=sendable('%s (%s): %s' % (UNDELIVERED, method, why)),
            rolled_back=kwargs.get('rolled_back', False),
            power=power if unsendable({'power': power}) is None else None)

    def _send_result(self, ctx, method, uuid, kwargs):
        """True: recorded; False: refused or preempted (nothing more to
        do). Raises :class:`Undeliverable` when no later try can help."""
        delay = 0.1
        while True:
            done, failure = self._send_once(ctx, method, uuid, kwargs)
            if done is not None:
                return done
            if self._stopping:
                return False
            LOG.warning('Result of task %s not delivered (%s); retrying in '
                        '%.1f s', ctx.task_id, failure, delay)
            time.sleep(delay)
            delay = min(delay * 2, self.conf.compute.report_retry_max)

    def _send_once(self, ctx, method, uuid, kwargs):
        """``(True or False, None)`` when settled, as :meth:`_send_result`
        answers; ``(None, failure)`` when to send again."""
        try:
            getattr(self.conductor, method)(ctx, host=self.host,
                                            instance_uuid=uuid, **kwargs)
            if kwargs.get('power') is not None:
                self.delivered.record([kwargs['power']])
            return True, None
        except exception.TaskPreempted as err:
            stop = TaskStopped(err)
            if stop.deleted:
                self._cleanup_deleted(uuid)
            LOG.info('Result of task %s not recorded: %s', ctx.task_id, err)
            return False, None
        except UNAVAILABLE as err:     # not recorded yet: send again
            return None, err
        except exception.Invalid as err:    # refused as bad
            raise Undeliverable('refused by the conductor: %s' % err) from None
        except exception.TristateError as err:
            LOG.error('Conductor refused the result of task %s: %s',
                      ctx.task_id, err)
            return False, None
        except Exception as err:       # bus or conductor unavailable?
            if undeliverable(err):
                raise Undeliverable('%s: %s' % (_kind(err), err)) from None
            return None, err

    def _stopped(self, inst, action, stop):
        LOG.info('Task %s stopped: %s', action, stop)
        if stop.deleted:
            self._cleanup_deleted(inst['uuid'])

    def _cleanup_deleted(self, uuid):
        try:
            self.driver.destroy(uuid)
            configdrive.remove(self.conf, self.host, uuid)
        except Exception:
            LOG.exception('Could not destroy domain %s of a deleted instance',
                          uuid)
        self.dhcp.refresh_from(self.driver, uuid)

    def stop(self):
        self._stopping = True


UNDELIVERED = 'the result of the task could not be delivered'


def unsendable(values):
    """Why ``values`` cannot travel on the bus (text that is not valid
    Unicode, a value JSON cannot carry), or None."""
    try:
        json.dumps(rpc.plain(values), ensure_ascii=False).encode('utf-8')
    except MALFORMED as err:
        return '%s: %s' % (type(err).__name__, err)
    return None


def undeliverable(err):
    """Whether ``err``, raised sending a result, says the message itself
    is bad, so that no later try can succeed: raised while encoding it
    here, or by the conductor while reading or storing it (rebuilt with
    its built-in class, or a RemoteError naming it). A failure of the bus
    or of the conductor's database is not."""
    if isinstance(err, rpc.RemoteError):
        return err.exc_type in _MALFORMED_NAMES
    return isinstance(err, MALFORMED)


def _first_line(err):
    """An error's message without the remote traceback oslo.messaging
    appends."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def _kind(err):
    if isinstance(err, rpc.RemoteError):
        return err.exc_type
    return type(err).__name__.split('_Remote')[0]


def sendable(text):
    """``text`` with anything UTF-8 cannot carry escaped."""
    return text.encode('utf-8', 'backslashreplace').decode('utf-8')


class _TaskView:
    """What a task handler sees: the driver, the config, the image cache,
    image_client() and progress()."""

    def __init__(self, manager, ctx):
        self.driver = manager.timed_driver()
        self.host = manager.host
        self.conf = manager.conf
        self.image_cache = manager.image_cache
        self._manager = manager
        self._ctx = ctx

    def image_client(self, params):
        """A Glance client for the image service the task names
        (``params['image']``: its ``url`` and ``grant``), or None."""
        spec = params.get('image') or {}
        if not spec.get('url'):
            return None
        conf = self.conf.image
        return image_client.GlanceClient(
            spec['url'], grant=spec.get('grant'),
            session=self._manager.image_session(),
            timeout=conf.upload_idle_timeout, chunk_size=conf.chunk_size)

    def _ask_destination(self, call, inst, failed, **kwargs):
        """A conductor call a move's source makes for its destination: its
        failure raised as a VirtError ``failed``: the reason (rolled back:
        the source is untouched), a preemption as TaskStopped."""
        try:
            return call(self._ctx, host=self._manager.host,
                        instance_uuid=inst['uuid'],
                        timeout=self.conf.conductor.rpc_timeout
                        + RECEIVE_MARGIN, **kwargs)
        except exception.TaskPreempted as err:
            raise TaskStopped(err) from None
        except Exception as err:    # the destination's or the bus's failure
            raise virt.VirtError('%s: %s' % (failed, _first_line(err)),
                                 rolled_back=True) from None

    def disk_sent(self, inst, disk):
        """Conductor RPC 1.16 for a cold move's source: the destination
        receives ``disk``."""
        return self._ask_destination(
            self._manager.conductor.migration_disk_sent, inst,
            'the destination did not receive the disk', disk=disk)

    def prepare_destination(self, inst, carried=None):
        """Conductor RPC 1.18 for a live migration's source: the
        destination's prepare (what the driver's ``migrate_out`` takes as
        ``incoming``; nothing moved yet if it fails)."""
        return self._ask_destination(
            self._manager.conductor.migration_prepare_dest, inst,
            'the destination could not prepare', carried=carried)

    def progress(self, inst, *, step=None, percent=None):
        try:
            self._manager.conductor.task_progress(
                self._ctx, host=self._manager.host, instance_uuid=inst['uuid'],
                step=step, percent=percent)
        except exception.TaskPreempted as err:
            raise TaskStopped(err) from None
        except UNAVAILABLE as err:  # not recorded: as if not delivered
            LOG.warning('Progress of task %s not recorded: %s',
                        self._ctx.task_id, err)
        except exception.TristateError:
            raise
        except Exception as err:    # progress is advisory: carry on
            LOG.warning('Progress of task %s not delivered: %s',
                        self._ctx.task_id, err)
