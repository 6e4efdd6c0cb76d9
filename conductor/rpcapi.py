"""Client side of the conductor's RPC API, for the API tier and the agents.

Wrap it, do not bypass it: every call the rest of the tree makes to a
conductor is a method here, with the version it needs.

Version history:

* 1.0 - Initial version: create_instance, run_action, delete_instance,
  instance_deleted, reset_state, get_instance, list_instances, list_hosts,
  list_actions, update_policies (API tier); heartbeat, task_progress, task_finished,
  task_failed, power_report (agents).
* 1.1 - create_instance takes reservation_id (a lease's reservation to
  build on); the conductor also serves the ``leases`` namespace
  (conductor/leases/rpcapi.py).
* 1.2 - heartbeat takes service_version (the agent's package version, for
  ``tristate-manage status``); get_quotas, update_quotas and tenant_usage
  (API tier: os-quota-sets, os-simple-tenant-usage).
* 1.3 - rename_instance (API tier: ``PUT /servers/{id}``); run_action of
  ``rescue`` takes ``password``, and of ``snapshot``/``backup`` answers
  with the ``image_id`` the conductor decided.
* 1.4 - heartbeat takes ``power`` (agents): the periodic full power report
  rides on a heartbeat, ``{'reports': [...], 'full': <seq of the read>}``,
  and the heartbeat then answers as power_report does. One message per
  host per period instead of two; an agent capped below 1.4 sends its full
  reports with power_report, as before.
* 1.5 - instance_deleted takes ``host`` (API tier): where the deleted
  instance was placed, from the delete's own transaction, so that a
  conductor that has nothing to notify asks that host to clean up without
  reading the row again.
* 1.6 - instance_deleted takes ``doomed_hosts`` (API tier): the hosts
  other than its own where the deleted instance held an allocation (the
  destination of a live migration the delete preempted), from the
  delete's transaction, so that they are told at once to destroy their
  copy. Sent only when there are any; capped below 1.6, those hosts
  destroy it at their next power report instead.
* 1.7 - task_failed takes ``fault_code`` (agents): a 4xx when the failure
  is the user's mistake (an image missing, not active or corrupt), kept in
  the action log and shown as the server's fault code; capped below 1.7
  it is not sent and the fault is a 500.
* 1.8 - update_attributes (API tier: a server's name, description, user
  metadata, tags and lock, common/db/attributes.py); create_instance takes
  ``attributes`` (description, user metadata, tags, the boot request's
  reservation id and launch index); tenant_usage_page (API tier: Nova's
  usage paging from 2.40, ``marker``/``limit`` over instances).
* 1.9 - create_instance takes ``networks`` (API tier: Nova's 2.37
  ``networks`` of a create, ``auto``, ``none`` or ``[{"uuid"[,
  "fixed_ip"]}]``; the ports are allocated in the create's transaction).
  Sent only when it is not ``auto`` (what a conductor before 1.9 does
  when it has no network to allocate anyway); capped below 1.9 a request
  naming networks is refused.
* 1.10 - create_instance's ``attributes`` may carry guest access (issue
  24): ``key_name`` with the key pair's public key ``key_data``,
  ``user_data`` (base64) and ``config_drive``; a create with any of them
  is refused below 1.10 rather than sent to a conductor that would drop
  them.
* 1.11 - consoles (issue 24): get_console_output (API tier: the end of a
  guest's console log, read by its agent), create_console (API tier: a
  one-time token for the serial console), consume_console_token and
  consoles_alive (tristate-console-proxy: open a session once, and learn
  which sessions' instances were deleted).
* 1.12 - create_instance's ``attributes`` and update_attributes'
  ``changes`` take ``access_ip_v4``/``access_ip_v6`` (API tier: Nova's
  accessIPv4/accessIPv6, data the user sets); a conductor before 1.12
  refuses the keys, so they are not sent below it. get_diagnostics (API
  tier: what the instance's host reads of its domain, through compute
  agent RPC 1.4).
* 1.13 - create_instance takes ``force_host`` (an admin's ``zone:host``)
  and its ``attributes`` may carry ``availability_zone`` (the zone every
  build of the instance is placed in).
* 1.14 - create_instance's ``attributes`` may carry ``server_group`` (the
  uuid of the server group the new instance joins: Nova's ``group``
  scheduler hint); refused below 1.14 rather than built outside its group.
* 1.15 - run_action takes ``evacuate`` and ``evacuate_stopped`` (API
  tier: Nova's evacuate; ``host``, ``force``), refused below 1.15 rather
  than sent to a conductor that does not know them (issue 25).
* 1.16 - migration_disk_sent (agents: the source of a cold migration or
  cross-host resize says its disk is in the image store, with its SHA-256;
  the conductor has the destination receive it, through compute agent RPC
  1.8, and answers with the destination's answer: :mod:`conductor.migrate`).
* 1.17 - create_instance takes ``admin_pass`` and run_action of
  ``rebuild`` takes ``admin_pass`` and ``config_drive`` (API tier, issue
  24: Nova's adminPass, carried to the build or rebuild task and written
  into the config drive, never stored); below 1.17 an adminPass given is
  refused (503) and none is generated. run_action of ``rescue`` takes
  ``password_required`` (the user gave the password: the rescue fails,
  undone, when it cannot be set); below 1.17 it is not sent.
* 1.18 - migration_prepare_dest (agents: the source of a live migration,
  in its task, has the conductor ask the destination's prepare through
  compute agent RPC 1.6, and gets its answer; issue 25: the API request no
  longer waits for it).
* 1.19 - not used (a number handed out to work done in parallel).
* 1.20 - create_instance's ``attributes`` and update_attributes'
  ``changes`` take ``hostname`` (Nova's 2.90 hostname, an FQDN from 2.94)
  and ``auto_disk_config`` (Nova's OS-DCF:diskConfig, true for AUTO); a
  conductor before 1.20 refuses the keys, so they are not sent below it
  (a MANUAL disk config, what every conductor does, is then left out).
* 1.21 - run_action takes ``shelve``, ``shelve_offload`` and ``unshelve``
  (API tier: Nova's shelving, issue 22; ``unshelve`` with
  ``availability_zone`` and ``host``), refused below 1.21 rather than sent
  to a conductor that does not know them.
* 1.22 - run_action takes ``set_security_groups`` (API tier: Nova's
  addSecurityGroup/removeSecurityGroup; ``security_groups``: ``[]`` or
  ``["default"]``), refused below 1.22 rather than sent to a conductor that
  does not know it (issue 22).
* 1.23 - create_instance's ``attributes`` may carry ``scheduler_hints``
  (API tier: Nova's ``same_host`` / ``different_host``, ``{"same_host":
  [uuid, ...], "different_host": [...]}``, honoured by every build and
  move of the instance); refused below 1.23 rather than placed without
  them.

Calls go out at the lowest version that carries them (1.0 for all but the
ones that need more), so that ``[upgrade_levels] conductor = 1.0`` keeps
talking to conductors that predate 1.1; a call that needs more than the cap
is refused here, with the reason, rather than sent without what it needs.
"""

from common import exception
from common import metrics
from common import rpc

VERSION = '1.23'
BASE_VERSION = '1.0'
# create_instance's attributes of 1.10.
GUEST_ACCESS = frozenset({'key_name', 'key_data', 'user_data',
                          'config_drive'})
# create_instance's attributes and update_attributes' changes of 1.20.
HOSTNAME_DISK = frozenset({'hostname', 'auto_disk_config'})


def _version(text):
    return tuple(int(part) for part in text.split('.'))


def _at_least(kwargs, version, **values):
    """The call's ``version`` raised to ``version`` (never lowered: each
    feature names the least it needs), and its ``values``."""
    if _version(version) > _version(kwargs.get('version', BASE_VERSION)):
        kwargs['version'] = version
    kwargs.update(values)


class ConductorAPI:
    """Calls the conductors on ``[conductor] topic``.

    ``statedb`` is given by callers that have database credentials (the API
    tier, ``tristate-all``): :meth:`delete_instance` then makes the hard
    delete's UPDATE itself and never waits for the bus (DESIGN.md section 4),
    and :meth:`get_instance` and :meth:`list_instances` read the rows
    themselves.
    Agents have no database access and pass nothing.

    ``bounded`` (with a ``timeout``): every call answers or fails within
    ``timeout`` seconds, bus or no bus (:class:`common.rpc.Connector`;
    :class:`common.rpc.BusUnreachable` when the broker cannot be reached),
    as the API tier promises its clients a 503 after ``[api] rpc_timeout``.
    """

    def __init__(self, bus, conf, *, statedb=None, timeout=None,
                 bounded=False):
        self.statedb = statedb
        self.client = bus.client(conf.conductor.topic, BASE_VERSION,
                                 version_cap=conf.upgrade_levels.conductor,
                                 timeout=timeout)
        self.connector = None
        if bounded and timeout is not None:
            self.timeout = timeout
            self.connector = bus.connector(conf.conductor.topic)

    def prepare(self, **kwargs):
        """``client.prepare(**kwargs)``, bounded as this client is (see
        above): what :class:`conductor.leases.rpcapi.LeaseAPI` calls with."""
        if self.connector is None:
            return self.client.prepare(**kwargs)
        left = self.connector.wait(self.timeout)
        return self.client.prepare(timeout=left, retry=rpc.BOUNDED_RETRY,
                                   **kwargs)

    def _long(self, version, timeout):
        """A call that waits for another agent's work (a destination's):
        ``timeout`` seconds, not this client's bound, which would cut it
        at the very time the conductor gives that agent (a bounded
        client first waits, within its bound, for the bus)."""
        if self.connector is None:
            return self.client.prepare(version=version, timeout=timeout)
        self.connector.wait(self.timeout)
        return self.client.prepare(version=version, retry=rpc.BOUNDED_RETRY,
                                   timeout=timeout or self.timeout)

    def _call(self, ctx, method, version=BASE_VERSION, **kwargs):
        try:
            return self.prepare(version=version).call(ctx, method, **kwargs)
        except exception.TristateError as err:
            # oslo.messaging appends the server's traceback to str(err);
            # callers get the same error, with its message alone.
            raise exception.from_dict(err.to_dict()) from None
        except rpc.MessagingException as err:
            metrics.rpc_error(method, err)
            raise

    # --- API tier --------------------------------------------------------------

    def create_instance(self, ctx, *, name, flavor, image_ref, policies=None,
                        reservation_id=None, attributes=None,
                        force_host=None, networks=None, admin_pass=None):
        kwargs = {}
        if reservation_id is not None:      # 1.1; a 1.0 call has no such key
            self._need('1.1', 'scheduling on a reservation')
            kwargs = {'version': '1.1', 'reservation_id': reservation_id}
        if attributes and not self.client.can_send_version('1.8') and (
                set(attributes) <= {'boot_reservation_id', 'launch_index'}
                and not attributes.get('launch_index')):
            attributes = None   # one server: a conductor before 1.8 keeps
            #                     no reservation id, and nothing else is lost
        if attributes:
            self._with_attributes(kwargs, attributes)
        if networks not in (None, 'auto'):  # 1.9
            self._need('1.9', 'a server\'s networks')
            _at_least(kwargs, '1.9', networks=networks)
        if force_host is not None or (attributes or {}).get(
                'availability_zone') is not None:           # 1.13
            self._need('1.13', 'an availability zone or a forced host')
            _at_least(kwargs, '1.13')
            if force_host is not None:
                kwargs['force_host'] = force_host
        if admin_pass is not None:                          # 1.17
            self._need('1.17', 'an admin password (adminPass)')
            _at_least(kwargs, '1.17', admin_pass=admin_pass)
        return self._call(ctx, 'create_instance', name=name, flavor=flavor,
                          image_ref=image_ref, policies=policies or {},
                          **kwargs)

    def _with_attributes(self, kwargs, attributes):
        """The create's ``attributes`` into ``kwargs``, at the version the
        ones given need."""
        if GUEST_ACCESS & set(attributes):                  # 1.10
            self._need('1.10', 'a key pair, user data or a config drive')
            _at_least(kwargs, '1.10', attributes=attributes)
        else:                                               # 1.8
            self._need('1.8', 'a server\'s description, metadata, tags or '
                       'min_count/max_count')
            _at_least(kwargs, '1.8', attributes=attributes)
        if {'access_ip_v4', 'access_ip_v6'} & set(attributes):
            _at_least(kwargs, self._access_ips(attributes, '1.8'))  # 1.12
        if attributes.get('server_group') is not None:      # 1.14
            self._need('1.14', 'a server group (scheduler hint group)')
            _at_least(kwargs, '1.14')
        if HOSTNAME_DISK & set(attributes):                  # 1.20
            _at_least(kwargs, self._hostname_disk(attributes, '1.8'))
        if attributes.get('scheduler_hints') is not None:   # 1.23
            self._need('1.23', 'the same_host or different_host scheduler '
                       'hint')
            _at_least(kwargs, '1.23')

    def _hostname_disk(self, values, version):
        """1.20 when ``values`` set a hostname or a disk config, else
        ``version``."""
        if HOSTNAME_DISK & set(values):
            self._need('1.20', 'a server\'s hostname or OS-DCF:diskConfig')
            return '1.20'
        return version

    def _access_ips(self, values, version):
        """1.12 when ``values`` set accessIPv4/accessIPv6, else
        ``version``."""
        if {'access_ip_v4', 'access_ip_v6'} & set(values):
            self._need('1.12', 'a server\'s accessIPv4/accessIPv6')
            return '1.12'
        return version

    def can_send(self, version):
        """Whether calls of ``version`` pass ``[upgrade_levels]``."""
        return self.client.can_send_version(version)

    def carries_power(self):
        """Whether a heartbeat may carry a full power report (1.4)."""
        return self.client.can_send_version('1.4')

    def _need(self, version, what):
        if not self.client.can_send_version(version):
            raise exception.ServiceUnavailable(
                reason='%s is not supported until the conductors are '
                       'upgraded: it needs conductor RPC API %s and '
                       '[upgrade_levels] conductor caps it at %s' % (
                           what, version, self.client.version_cap))

    def run_action(self, ctx, instance_uuid, action, params=None):
        params = params or {}
        version = BASE_VERSION
        if action == 'rescue' and 'password' in params:
            # 1.3: a rescue takes the password the API answered with
            self._need('1.3', 'rescue with an admin password')
            version = '1.3'
            if params.get('password_required'):
                if self.client.can_send_version('1.17'):
                    version = '1.17'
                else:
                    params = {k: v for k, v in params.items()
                              if k != 'password_required'}
        if action == 'rebuild' and GUEST_ACCESS & set(params):
            # 1.10: a rebuild's new key pair or user data
            self._need('1.10', 'a rebuild with a key pair or user data')
            version = '1.10'
        if action in ('evacuate', 'evacuate_stopped'):
            self._need('1.15', 'evacuation')
            version = '1.15'
        if action in ('shelve', 'shelve_offload', 'unshelve'):
            self._need('1.21', 'shelving')
            version = '1.21'
        if action == 'set_security_groups':
            self._need('1.22', 'security groups')
            version = '1.22'
        if action == 'rebuild' and 'admin_pass' in params:
            # 1.17: a rebuild's admin password
            self._need('1.17', 'a rebuild with an admin password')
            version = '1.17'
        return self._call(ctx, 'run_action', version=version,
                          instance_uuid=instance_uuid, action=action,
                          params=params)

    def delete_instance(self, ctx, instance_uuid, *, check=None):
        """Hard delete. With database access: the UPDATE here, then a
        best-effort request for the host's cleanup that never fails the
        delete. Without: one call to a conductor. ``check(instance)`` may
        refuse first by raising (the API's policy): with database access it
        runs inside the delete's transaction, without on a read before."""
        if self.statedb is None:
            if check is not None:
                check(self.get_instance(ctx, instance_uuid))
            return self._call(ctx, 'delete_instance',
                              instance_uuid=instance_uuid)
        from conductor import gateway
        before, after = gateway.hard_delete_local(self.statedb, ctx,
                                                  instance_uuid, check=check)
        doomed = after.pop('doomed_hosts', [])
        try:
            # retry=0: a cast retries forever by default, which would hold
            # the delete until the broker is back.
            version, extra = self._deleted_version(after['host'], doomed)
            self.client.prepare(retry=0, version=version).cast(
                ctx, 'instance_deleted', instance_uuid=instance_uuid,
                old_vm_state=before['vm_state'],
                old_task_state=before['task_state'], **extra)
        except Exception:        # bus down: the agent's report cleans up later
            gateway.LOG.warning('Could not request cleanup of deleted '
                                'instance %s; the next power report will',
                                instance_uuid, exc_info=True)
        return after

    def _deleted_version(self, host, doomed):
        """(version, extra arguments) of an ``instance_deleted`` cast."""
        if doomed and self.client.can_send_version('1.6'):
            return '1.6', {'host': host, 'doomed_hosts': doomed}
        if self.client.can_send_version('1.5'):
            return '1.5', {'host': host}
        return BASE_VERSION, {}

    def rename_instance(self, ctx, instance_uuid, *, name):
        """1.3: change an instance's display name."""
        self._need('1.3', 'renaming a server')
        return self._call(ctx, 'rename_instance', version='1.3',
                          instance_uuid=instance_uuid, name=name)

    def update_attributes(self, ctx, instance_uuid, changes):
        """1.8: change a server's name, description, user metadata, tags
        or lock (see common/db/attributes.py for ``changes``)."""
        self._need('1.8', 'changing a server\'s metadata, tags or lock')
        return self._call(ctx, 'update_attributes',
                          version=max(
                              self._access_ips(changes, '1.8'),
                              self._hostname_disk(changes, '1.8'),
                              key=_version),
                          instance_uuid=instance_uuid, changes=changes)

    def get_diagnostics(self, ctx, instance_uuid):
        """1.12: the instance's diagnostics from its host's driver."""
        self._need('1.12', 'server diagnostics')
        return self._call(ctx, 'get_diagnostics', version='1.12',
                          instance_uuid=instance_uuid)

    def reset_state(self, ctx, instance_uuid, state):
        return self._call(ctx, 'reset_state', instance_uuid=instance_uuid,
                          state=state)

    def update_policies(self, ctx, instance_uuid, policies):
        """Set ``user_shutdown`` and/or ``crash`` of one instance."""
        return self._call(ctx, 'update_policies', instance_uuid=instance_uuid,
                          policies=policies)

    def get_instance(self, ctx, instance_uuid):
        """With database access, read here (no conductor needed); the
        same owner check as the conductor's."""
        if self.statedb is None:
            return self._call(ctx, 'get_instance',
                              instance_uuid=instance_uuid)
        from conductor import gateway
        return gateway.check_owner(ctx,
                                   self.statedb.get_instance(instance_uuid))

    def list_instances(self, ctx, *, all_projects=False,
                       include_deleted=False):
        """With database access, read here (no conductor needed, and no
        thousand rows serialized twice over the bus: ``GET
        /servers/detail``), with the conductor's checks; timestamps are
        then datetimes, not the bus's ISO strings. ``include_deleted``:
        hard-deleted instances too (database access only: the API tier's
        Nova ``deleted`` and ``changes-since`` listings)."""
        if self.statedb is None:
            if include_deleted:
                raise exception.Invalid(
                    reason='listing deleted servers needs database access')
            return self._call(ctx, 'list_instances',
                              all_projects=all_projects)
        if all_projects and not ctx.is_admin:
            raise exception.Forbidden(
                action='listing all projects (admin only)')
        return self.statedb.list_instances(
            project_id=None if all_projects else ctx.project_id,
            include_deleted=include_deleted)

    def list_hosts(self, ctx):
        return self._call(ctx, 'list_hosts')

    def list_actions(self, ctx, instance_uuid):
        return self._call(ctx, 'list_actions', instance_uuid=instance_uuid)

    def get_quotas(self, ctx, project_id):
        """{'limits': {...}, 'usage': {...}} of one project (1.2)."""
        self._need('1.2', 'quota sets')
        return self._call(ctx, 'get_quotas', version='1.2',
                          project_id=project_id)

    def update_quotas(self, ctx, project_id, values):
        """Override some of a project's limits (admin; 1.2)."""
        self._need('1.2', 'quota sets')
        return self._call(ctx, 'update_quotas', version='1.2',
                          project_id=project_id, values=values)

    def tenant_usage(self, ctx, *, start, end, project_id=None):
        """Billable usage between two ISO 8601 times, per project (1.2)."""
        self._need('1.2', 'usage reports')
        return self._call(ctx, 'tenant_usage', version='1.2', start=start,
                          end=end, project_id=project_id)

    def tenant_usage_page(self, ctx, *, start, end, project_id=None,
                          marker=None, limit=None):
        """``{'usages': {...}, 'more': bool}``: one page of instances
        (1.8)."""
        self._need('1.8', 'paged usage reports')
        return self._call(ctx, 'tenant_usage_page', version='1.8',
                          start=start, end=end, project_id=project_id,
                          marker=marker, limit=limit)

    # --- consoles (1.11) -------------------------------------------------------

    def get_console_output(self, ctx, instance_uuid):
        """The end of the guest's console log, as text."""
        self._need('1.11', 'console output')
        return self._call(ctx, 'get_console_output', version='1.11',
                          instance_uuid=instance_uuid)

    def create_console(self, ctx, instance_uuid, console_type):
        """``{'token', 'expires_at'}``: a one-time console token."""
        self._need('1.11', 'remote consoles')
        return self._call(ctx, 'create_console', version='1.11',
                          instance_uuid=instance_uuid,
                          console_type=console_type)

    def consume_console_token(self, ctx, token):
        """What the token opens (``host``, ``address``, ``port``,
        ``instance_uuid``), once."""
        self._need('1.11', 'remote consoles')
        return self._call(ctx, 'consume_console_token', version='1.11',
                          token=token)

    def consoles_alive(self, ctx, instance_uuids):
        """Those of the instances that still exist."""
        self._need('1.11', 'remote consoles')
        return self._call(ctx, 'consoles_alive', version='1.11',
                          instance_uuids=list(instance_uuids))

    # --- agents ----------------------------------------------------------------

    def heartbeat(self, ctx, *, host, capacity, started_at, lost_tasks=(),
                  version=None, power=None):
        """``power``: a full power report to carry (see 1.4), whose
        answer is returned; check :meth:`carries_power` first."""
        kwargs = {}
        if power is not None:
            self._need('1.4', 'a full power report in a heartbeat')
            kwargs = {'version': '1.4', 'service_version': version,
                      'power': power}
        elif version is not None and self.client.can_send_version('1.2'):
            kwargs = {'version': '1.2', 'service_version': version}
        return self._call(ctx, 'heartbeat', host=host, capacity=capacity,
                          started_at=started_at, lost_tasks=list(lost_tasks),
                          **kwargs)

    def task_progress(self, ctx, *, host, instance_uuid, step=None,
                      percent=None):
        return self._call(ctx, 'task_progress', host=host,
                          instance_uuid=instance_uuid, step=step,
                          percent=percent)

    def task_finished(self, ctx, *, host, instance_uuid, power=None,
                      values=None):
        return self._call(ctx, 'task_finished', host=host,
                          instance_uuid=instance_uuid, power=power,
                          values=values or {})

    def migration_disk_sent(self, ctx, *, host, instance_uuid, disk,
                            timeout=None):
        """1.16: the source's disk is in the store (``disk``: image_id,
        sha256, size, start); answers once the destination has it (up to
        ``timeout`` seconds), or raises its failure."""
        self._need('1.16', 'a cold migration')
        try:
            return self._long('1.16', timeout).call(
                ctx, 'migration_disk_sent', host=host,
                instance_uuid=instance_uuid, disk=disk)
        except exception.TristateError as err:
            raise exception.from_dict(err.to_dict()) from None
        except rpc.MessagingException as err:
            metrics.rpc_error('migration_disk_sent', err)
            raise

    def migration_prepare_dest(self, ctx, *, host, instance_uuid,
                               carried=None, timeout=None):
        """1.18: the destination of the live migration task ``ctx``
        prepared (what the source's driver needs), or its failure raised.
        ``carried``: what the source sends the destination with it."""
        self._need('1.18', 'a live migration prepared in its task')
        try:
            return self._long('1.18', timeout).call(
                ctx, 'migration_prepare_dest', host=host,
                instance_uuid=instance_uuid, carried=carried or {})
        except exception.TristateError as err:
            raise exception.from_dict(err.to_dict()) from None
        except rpc.MessagingException as err:
            metrics.rpc_error('migration_prepare_dest', err)
            raise

    def task_failed(self, ctx, *, host, instance_uuid, error, rolled_back,
                    power=None, fault_code=None):
        """``fault_code`` (1.7): a 4xx when the failure is the user's
        mistake; dropped for a conductor capped below 1.7 (the fault is
        then a 500, as before)."""
        kwargs = {}
        if fault_code is not None and self.client.can_send_version('1.7'):
            kwargs = {'version': '1.7', 'fault_code': fault_code}
        return self._call(ctx, 'task_failed', host=host,
                          instance_uuid=instance_uuid, error=error,
                          rolled_back=rolled_back, power=power, **kwargs)

    def power_report(self, ctx, *, host, reports, full=False):
        return self._call(ctx, 'power_report', host=host, reports=reports,
                          full=full)
