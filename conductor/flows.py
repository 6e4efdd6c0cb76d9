"""The conductor's flows: build, every action of the table, delete.

A flow validates the request, claims the task through the gateway, does the
conductor's part (scheduling, allocating) and sends the task to the agent of
the instance's host. The agent reports back (:mod:`conductor.results`). A
request that fails validation changes nothing.
"""

import contextlib
import datetime
import logging

from common import actions
from common import exception
from common import flavors
from common import hostnames
from common import numa
from common import rpc
from common import states
from common.db import attributes as attributes_db
from common.db import host_hints
from conductor import delivery
from conductor import gateway as gw
from conductor import images
from conductor import migrate
from conductor import secgroups
from conductor import shelve

LOG = logging.getLogger(__name__)
TABLE = actions.TABLE

# Parameters each action takes: name -> (type, required). Others take none.
PARAMS = {
    'rebuild': {'image_ref': (str, False),
                # the server's new key pair or user data (null: none)
                'key_name': ((str, type(None)), False),
                'key_data': ((str, type(None)), False),
                'user_data': ((str, type(None)), False),
                # RPC 1.17: the admin password for the config drive (never
                # stored), and a config drive made for it
                'admin_pass': (str, False),
                'config_drive': (bool, False)},
    'rescue': {'image_ref': (str, False), 'password': (str, False),
               # RPC 1.17: the user gave the password: set it or fail
               'password_required': (bool, False)},
    'resize': {'flavor': (str, True)},
    'live_migrate': {'host': (str, False)},
    'migrate': {'host': (str, False)},
    'snapshot': {'image_name': (str, True), 'image_id': (str, False),
                 'metadata': (dict, False)},
    'backup': {'image_name': (str, True), 'rotation': (int, False),
               'backup_type': (str, False), 'image_id': (str, False),
               'metadata': (dict, False)},
    'set_password': {'password': (str, True)},
    # RPC 1.21: Nova's unshelve to a zone (2.77; null: unpinned) or a host
    # (2.91, admins)
    'unshelve': {'availability_zone': ((str, type(None)), False),
                 'host': (str, False)},
    # RPC 1.22: Nova's add/removeSecurityGroup ([] or ["default"])
    'set_security_groups': {'security_groups': (list, True)},
}


class MigrationNotPrepared(Exception):
    """A live migration's destination could not get ready: the task
    fails before it starts, the guest untouched."""


def validate_params(action, params):
    spec = PARAMS.get(action, {})
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise exception.Invalid(
            reason='%s takes %s; unexpected %s' % (
                action, ', '.join(sorted(spec)) or 'no parameters',
                ', '.join(unknown)))
    for name, (kind, required) in spec.items():
        if name not in params:
            if required:
                raise exception.Invalid(reason='%s needs parameter %r (%s)'
                                        % (action, name, _kind_name(kind)))
            continue
        if not isinstance(params[name], kind) or (
                isinstance(params[name], bool) and kind is not bool):
            raise exception.Invalid(
                reason='%s parameter %r must be %s, not %r'
                       % (action, name, _kind_name(kind), params[name]))


def _kind_name(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return ' or '.join('null' if k is type(None) else k.__name__
                       for k in kinds)


def _claim_message(prepared):
    """What the action log keeps of a task's parameters: the image a
    snapshot or backup makes. Never a password."""
    if 'image_id' in prepared:
        return 'image %s (%s)' % (prepared['image_id'],
                                  prepared['image_name'])
    return None


def _locking_name(changes):
    """The name the lock check knows a change by (common/actions.py)."""
    if 'lock' in changes:
        return 'lock' if changes['lock']['locked'] else 'unlock'
    if set(changes) <= {'name', 'description', 'tags', 'access_ip_v4',
                        'access_ip_v6', 'hostname', 'auto_disk_config'}:
        # Nova locks neither PUT /servers/{id} nor the tags
        return 'tags' if set(changes) == {'tags'} else 'rename'
    return 'update'


_CREATE_ATTRIBUTES = {'description': (str, type(None)), 'metadata': dict,
                      'tags': list, 'boot_reservation_id': str,
                      'launch_index': int, 'availability_zone': str,
                      'key_name': str, 'key_data': str, 'user_data': str,
                      'config_drive': bool, 'access_ip_v4': str,
                      'access_ip_v6': str, 'server_group': str,
                      'hostname': str, 'auto_disk_config': bool,
                      'scheduler_hints': dict}
# What a rebuild may change of the guest's access (RPC 1.10; config_drive
# 1.17: true when an adminPass needs one).
GUEST_KEYS = ('key_name', 'key_data', 'user_data', 'config_drive')
# Tasks that make the guest's disks, and so its config drive.
GUEST_TASKS = ('build', 'rebuild', 'unshelve')


def guest_params(inst, zone_of):
    """A build or rebuild task's parameters of guest access (issue 24):
    ``key_name``, ``key_data``, ``user_data``, ``config_drive``; with a
    config drive also what its meta_data.json says of the instance (its
    host's availability zone: ``zone_of()``, read only then)."""
    params = {key: inst.get(key)
              for key in ('key_name', 'key_data', 'user_data')}
    params['config_drive'] = bool(inst.get('config_drive'))
    if params['config_drive']:
        params['config_drive_meta'] = {
            'hostname': hostnames.of_instance(inst),
            'metadata': dict(inst.get('metadata') or {}),
            'launch_index': inst.get('launch_index') or 0,
            'availability_zone': zone_of()}
    return params


def _create_attributes(attributes, metadata_limit):
    """The new instance's description, user metadata, tags, boot
    reservation, launch index and access addresses, checked (RPC 1.8,
    1.12); ``metadata_limit()``: the project's metadata_items, read only
    when there is metadata."""
    attributes = dict(attributes or {})
    for key, value in attributes.items():
        kind = _CREATE_ATTRIBUTES.get(key)
        if kind is None or not isinstance(value, kind):
            raise exception.Invalid(
                reason='create attributes: %r is not one of %s with a value '
                       'of the right type' % (key, ', '.join(
                           sorted(_CREATE_ATTRIBUTES))))
    meta = attributes.get('metadata', {})
    metadata_items = metadata_limit() if meta else -1
    if 0 <= metadata_items < len(meta):
        raise exception.QuotaExceeded(
            'Quota exceeded for metadata_items: Requested %d, but the limit '
            'is %d. Maximum number of metadata items exceeds %d'
            % (len(meta), metadata_items, metadata_items))
    if len(attributes.get('tags', ())) > attributes_db.MAX_TAGS:
        raise exception.Invalid('The number of tags exceeded the per-server '
                                'limit %d' % attributes_db.MAX_TAGS)
    if 'scheduler_hints' in attributes:
        attributes['scheduler_hints'] = host_hints.validate(
            attributes['scheduler_hints'])
    return attributes


def validate_networks(networks):
    """A create's ``networks`` (RPC 1.9): None, ``auto``, ``none`` or a
    list of ``{"uuid": str[, "fixed_ip": str]}``; the API checked the
    request's shape already, this checks what crossed the bus."""
    if networks is None or networks in ('auto', 'none'):
        return networks
    if not isinstance(networks, list) or not all(
            isinstance(n, dict) and isinstance(n.get('uuid'), str)
            and set(n) <= {'uuid', 'fixed_ip'} for n in networks):
        raise exception.Invalid(reason='networks: "auto", "none" or a list '
                                'of {"uuid"[, "fixed_ip"]}, got %r'
                                % (networks,))
    return networks


def validate_name(name):
    if not isinstance(name, str) or not name.strip() or len(name) > 255:
        raise exception.Invalid(reason='name must be 1-255 characters, '
                                'got %r' % (name,))


def validate_policies(policies):
    choices = {'user_shutdown': states.USER_SHUTDOWN_POLICIES,
               'crash': states.CRASH_POLICIES}
    for key, value in policies.items():
        if key not in choices:
            raise exception.Invalid(reason='unknown policy %r: expected %s'
                                    % (key, ', '.join(sorted(choices))))
        if value not in choices[key]:
            raise exception.InvalidState(field='%s policy' % key, value=value,
                                         expected=', '.join(choices[key]))


# Nova's states for a change of user metadata (no task running) and of tags
# (compute.api.update_instance_metadata, server_tags): a 409 in any other.
_ATTRIBUTE_STATES = (states.vm.ACTIVE, states.vm.PAUSED, states.vm.SUSPENDED,
                     states.vm.STOPPED)


def _refuse_attribute_state(inst, changes):
    for key, needs_idle in (('metadata', True), ('tags', False)):
        # a change made as part of the running task (a rebuild's metadata)
        # is that task's, not another's
        busy = (needs_idle and inst.get('task_id') and inst['task_id'] != (
            changes.get(key) or {}).get('during_task'))
        if key in changes and (busy or inst['vm_state']
                               not in _ATTRIBUTE_STATES):
            raise exception.ActionNotAllowed(
                action='change the %s of' % key, instance=inst['uuid'],
                vm_state=inst['vm_state'], allowed=_ATTRIBUTE_STATES,
                task_state=inst.get('task_state') if busy else None,
                task_id=inst.get('task_id') if busy else None)


def _refuse_numa_move(inst, action, new_cells=None):
    """A resize or cold migration of a guest with NUMA cells (or to a
    flavor with them) is refused: the cold move's domain on its new host
    is made from the flavor alone, without the cells."""
    if inst.get('numa_cells') or new_cells:
        raise exception.Invalid(
            reason='instance %s: %s of a server whose flavor has guest NUMA '
                   'cells (hw:numa_nodes > 1) is not supported yet'
                   % (inst['uuid'], 'cold migration' if action == 'migrate'
                      else 'resize'))


class Flows:
    def __init__(self, *, gateway, scheduler, compute, conf):
        self.gateway = gateway
        self.db = gateway.db
        self.scheduler = scheduler
        self.compute = compute
        self.conf = conf
        self.delivery = delivery.Delivery(compute=compute, gateway=gateway,
                                          conf=conf)
        self.images = images.ImageAccess(conf, self.db)
        self.cold = migrate.ColdMoves(db=self.db, scheduler=scheduler,
                                      compute=compute, conf=conf)
        self.shelving = shelve.Shelving(self)
        self.security_groups = secgroups.SecurityGroups(self)

    # --- create and build -----------------------------------------------------

    def create(self, ctx, *, name, flavor, image_ref, policies,
               reservation_id=None, attributes=None, force_host=None,
               networks=None, admin_pass=None):
        """``admin_pass`` (RPC 1.17): the guest's admin password, sent in
        the build task only (for its config drive), never stored.
        ``attributes`` may hold the ``availability_zone`` asked for
        (every build of the instance honours it); ``force_host``: the
        admin's host for this first build (``zone:host``); ``networks``:
        Nova's 2.37 ``networks`` (ports allocated in the create's
        transaction); ``attributes['server_group']``: the group it joins
        (RPC 1.14), every build and move of it placed by its policy."""
        validate_name(name)
        if admin_pass is not None and not isinstance(admin_pass, str):
            raise exception.Invalid(reason='admin_pass must be a string')
        attributes = _create_attributes(
            attributes, lambda: self.db.metadata_items(ctx.project_id))
        if not isinstance(image_ref, str) or not image_ref:
            raise exception.Invalid(reason='image_ref must be a non-empty '
                                    'string, got %r' % (image_ref,))
        row = flavors.get_row(self.conf, self.db, flavor, ctx)
        chosen = flavors.of_row(row)
        cells = numa.cells_of(row['extra_specs'], chosen.vcpus,
                              chosen.memory_mb)
        validate_policies(policies)
        values = {
            'name': name, 'project_id': ctx.project_id or '',
            'user_id': ctx.user_id or '', 'flavor_name': chosen.name,
            'vcpus': chosen.vcpus, 'memory_mb': chosen.memory_mb,
            'disk_gb': chosen.disk_gb, 'image_ref': image_ref,
            'user_shutdown_policy': policies.get(
                'user_shutdown', self.conf.conductor.default_user_shutdown),
            'crash_policy': policies.get('crash',
                                         self.conf.conductor.default_crash),
        }
        if cells:
            values['numa_cells'] = cells
        group = attributes.pop('server_group', None)
        values.update(attributes)
        if self.conf.compute.force_config_drive:
            values['config_drive'] = True
        inst, task_ctx = self.gateway.create(
            ctx, values, networks=validate_networks(networks),
            default_network=self.conf.network.default_network,
            server_group=group)
        # Created at the scheduling step: no progress call of its own; the
        # answer is the row as this conductor left it (no read-back).
        with self._unsent_fails(task_ctx, inst, 'build'):
            if inst['no_address']:
                inst = self.gateway.bury(
                    task_ctx, inst['uuid'], reason=inst['no_address'],
                    use_pending=self.conf.use_pending_state)
            else:
                params = {'ports': inst['ports']}
                if admin_pass is not None:
                    params['admin_pass'] = admin_pass
                inst = self._build(task_ctx, inst, chosen, 'build', params,
                                   reservation_id=reservation_id,
                                   force_host=force_host)
        return _started(inst, task_ctx)

    @contextlib.contextmanager
    def _unsent_fails(self, task_ctx, inst, action):
        """The part of a claimed task before its send: if the database
        fails there, the task is ended as soon as it answers again (and
        the request answers 503), not held until the reaper's timeout."""
        try:
            yield
        except exception.DBUnavailable as err:
            self.delivery.fail_later(task_ctx, inst['uuid'], action,
                                     inst['vm_state'], err)
            raise

    def _started(self, inst, task_ctx):
        """The row as it is now; as it was claimed if the database fails
        now: the task is on its way, so the request succeeded."""
        try:
            inst = self.db.get_instance(inst['uuid'])
        except exception.DBUnavailable as err:
            LOG.warning('Task %s started; instance %s not read again: %s',
                        task_ctx.task_id, inst['uuid'], err)
        return _started(inst, task_ctx)

    def _build(self, task_ctx, inst, flavor, action, params,
               reservation_id=None, force_host=None):
        """Schedule and send the build; returns the instance as this
        conductor left it (the agent may be further on already)."""
        uuid = inst['uuid']
        try:
            if inst.get('progress_step') != states.step.SCHEDULING:
                self.gateway.progress(task_ctx, uuid,
                                      step=states.step.SCHEDULING)
            host = self.scheduler.select_and_allocate(
                task_ctx, uuid, flavor, reservation_id=reservation_id,
                only=force_host, zone=inst.get('availability_zone'))
        except exception.NoValidHost as err:
            return self.gateway.bury(task_ctx, uuid, reason=err.message,
                                     use_pending=self.conf.use_pending_state)
        except exception.TaskPreempted:
            # deleted while scheduling: nothing was allocated
            return self.db.get_instance(uuid)
        inst = dict(inst, host=host, progress_step=states.step.SCHEDULING)
        self.send(task_ctx, host, inst, action, params)
        return inst

    def _rebuild_buried(self, task_ctx, inst, action, prepared):
        """The build of a buried instance, again: the ports its create
        asked for first (buried again if a network is still full)."""
        if inst.get('requested_networks'):
            try:
                prepared['ports'] = self.db.allocate_requested(task_ctx,
                                                               inst['uuid'])
            except exception.NoFreeAddress as err:
                self.gateway.bury(task_ctx, inst['uuid'], reason=err.message,
                                  use_pending=self.conf.use_pending_state)
                return
        self._build(task_ctx, inst, flavors.of_instance(inst), action,
                    prepared)

    # --- every other action -------------------------------------------------------

    def run_action(self, ctx, instance_uuid, action, params):
        spec = TABLE.action(action)
        if spec.kind != actions.KIND_TASK or spec.system:
            raise exception.Invalid(reason='%s cannot be requested: %s' % (
                action, 'reconcile starts it' if spec.system
                else 'it has its own call'))
        if spec.admin_only and not ctx.is_admin:
            raise exception.Forbidden(action='%s (admin only)' % action)
        validate_params(action, params)
        inst = gw.check_owner(ctx, self.db.get_instance(instance_uuid))
        prepared = self._prepare(ctx, inst, action, params)
        self._check_host_up(inst, action)
        TABLE.refuse_if_denied(inst, action)
        if action == 'migrate' and not self.cold.can_move():
            raise exception.Invalid(reason=self.cold.no_transfer())
        if action in shelve.ACTIONS:
            prepared = self.shelving.prepare(ctx, inst, action, prepared)
        if action == secgroups.ACTION:
            prepared = self.security_groups.prepare(ctx, inst, prepared)
        if action in images.WRITES:
            prepared['image_id'] = self.images.prepare_snapshot(
                ctx, inst, action, prepared)
        try:
            inst, task_ctx = self.gateway.claim(
                ctx, instance_uuid, action, message=_claim_message(prepared),
                flavor=prepared.get('flavor'), owner_checked=True)
        except Exception:
            if action in images.WRITES and not params.get('image_id'):
                self.images.forget_snapshot(prepared['image_id'])
            raise
        with self._unsent_fails(task_ctx, inst, action):
            self._start(task_ctx, inst, action, prepared)
        after = self._started(inst, task_ctx)
        if 'image_id' in prepared:
            after['image_id'] = prepared['image_id']
        return after

    def _start(self, task_ctx, inst, action, prepared):
        """The claimed task's conductor part, then its send."""
        inst = self._new_guest_access(task_ctx, inst, action, prepared)
        if inst['task_state'] == states.task.BUILDING:
            # rebuild of a buried instance: the build runs again
            self._rebuild_buried(task_ctx, inst, action, prepared)
        elif action in shelve.ACTIONS:
            self.shelving.start(task_ctx, inst, action, prepared)
        elif action == secgroups.ACTION:
            self.security_groups.start(task_ctx, inst, prepared)
        elif self._allocate(task_ctx, inst, action, prepared):
            self._send_action(task_ctx, inst, action, prepared)

    def _new_guest_access(self, task_ctx, inst, action, prepared):
        """A claimed rebuild's new key pair or user data, stored on the
        instance (as Nova does at the request) before the task is sent:
        the rebuilt config drive carries them."""
        values = {k: prepared.pop(k) for k in GUEST_KEYS if k in prepared}
        if action != 'rebuild' or not values:
            return inst
        if 'key_name' in values and values['key_name'] is None:
            values['key_data'] = None
        return self.db.set_guest_access(task_ctx, inst['uuid'], values)

    def _prepare(self, ctx, inst, action, params):
        """Turn request parameters into what the agent needs (a resize's
        flavor: one ``ctx`` may use, as for a build)."""
        prepared = dict(params)
        if action == 'resize':
            row = flavors.get_row(self.conf, self.db, params['flavor'], ctx)
            new = flavors.of_row(row)
            if new.name == inst['flavor_name']:
                raise exception.Invalid(reason='instance %s already has '
                                        'flavor %s' % (inst['uuid'], new.name))
            _refuse_numa_move(inst, action, numa.cells_of(
                row['extra_specs'], new.vcpus, new.memory_mb))
            prepared['flavor'] = new.to_dict()
        if action == 'migrate':
            _refuse_numa_move(inst, action)
        if action in ('rebuild', 'rescue'):
            prepared.setdefault('image_ref', inst['image_ref'])
        if action == 'rebuild':
            prepared['ports'] = self.db.ports_of(inst['uuid'])
        if (action == 'live_migrate' and inst.get('config_drive')
                and not self.compute.prepares_in_task()):
            # its ISO is carried with the prepare the source asks for
            raise exception.Invalid(
                reason='instance %s has a config drive: its live migration '
                       'needs compute agent RPC 1.9 ([upgrade_levels] '
                       'compute caps it lower)' % inst['uuid'])
        if (action in ('live_migrate', 'migrate')
                and params.get('host') == inst['host']):
            raise exception.Invalid(reason='instance %s is already on host %s'
                                    % (inst['uuid'], inst['host']))
        return prepared

    def _check_host_up(self, inst, action):
        if inst['host'] is None or inst['vm_state'] == states.vm.PENDING:
            return
        try:
            host = self.db.get_host(inst['host'])
        except exception.HostNotFound:
            host = {'last_heartbeat': None}
        beat = host['last_heartbeat']
        if (beat is None or beat < self.scheduler.alive_since()
                or host.get('forced_down')):
            raise exception.ServiceUnavailable(
                reason='the agent of host %s, where instance %s runs, %s; '
                       '%s cannot run now (delete still can)'
                       % (inst['host'], inst['uuid'],
                          'was forced down by an admin'
                          if host.get('forced_down') else
                          'missed its heartbeats', action))

    def _allocate(self, task_ctx, inst, action, params):
        """Resources a resize or migration needs before the agent starts."""
        try:
            if action in ('resize', 'migrate'):
                dest = self.cold.allocate(task_ctx, inst, action, params)
                if dest != inst['host']:
                    params.update(self.cold.prepare(task_ctx, inst, dest))
            elif action == 'live_migrate':
                params['dest'] = self._migration_dest(task_ctx, inst, params)
                if self.compute.prepares_in_task():
                    params['prepare'] = True    # asked by the source
                else:
                    params['incoming'] = self._prepare_incoming(
                        task_ctx, inst, params['dest'])
        except exception.NoValidHost as err:
            self.gateway.fail_quietly(task_ctx, inst['uuid'], error=err.message,
                                      rolled_back=True)
            return False
        except MigrationNotPrepared as err:
            # the destination's allocation goes (as after a failed move)
            self.gateway.fail_quietly(task_ctx, inst['uuid'], error=str(err),
                                      rolled_back=True,
                                      settle=[{'end_moves': True}])
            return False
        return True

    def _send_action(self, task_ctx, inst, action, params):
        host = self._cold_end(task_ctx, inst, action, params)
        if host is not None:
            self.send(task_ctx, host, dict(inst, host=host), action, params)

    def _cold_end(self, task_ctx, inst, action, params):
        """The host a task goes to: the instance's, but the source for
        the revert of a cold move (:mod:`conductor.migrate`); a confirm or
        revert of one is told so (``cross_host``). None: the task ended
        (a revert whose destination did not destroy its copy)."""
        if action not in ('confirm_resize', 'revert_resize'):
            return inst['host']
        source = self.cold.other_host(inst)
        if source is None:
            return inst['host']
        params['cross_host'] = True
        if action == 'confirm_resize':
            return inst['host']
        try:
            self.cold.before_revert(task_ctx, inst, source)
        except migrate.RevertNotStarted as err:
            self.gateway.fail_quietly(task_ctx, inst['uuid'], error=str(err),
                                      rolled_back=True)
            return None
        return source

    def _prepare_incoming(self, task_ctx, inst, dest, extra=None):
        """The destination's answer to agent RPC 1.6 (its disk made ready
        on its own copy of the image, which it fetches now if it has none,
        up to ``[conductor] rpc_timeout``); None from an agent before 1.6.
        Asked by the source in its task (:meth:`prepare_destination`), or,
        for agents before RPC 1.9, in the request before the task is sent."""
        payload = gw.payload(inst)
        params = self.images.task_params(dest, payload, 'build', {})
        params.update(extra or {})
        try:
            return self.compute.prepare_live_migration(
                task_ctx, host=dest, instance=payload, params=params,
                timeout=self.conf.conductor.rpc_timeout)
        except Exception as err:     # any failure: the move is refused
            raise MigrationNotPrepared(
                'host %s could not prepare to receive instance %s: %s'
                % (dest, inst['uuid'], err)) from None

    def prepare_destination(self, ctx, *, host, instance_uuid, carried):
        """Conductor RPC 1.18, from the source ``host`` of the live
        migration task ``ctx.task_id``: the destination's answer to agent
        RPC 1.6 (its disk made ready, fetching the image if it has none),
        or its failure raised (the source then fails the task rolled
        back, and the destination removes what it made). ``carried``:
        what the source sends with it: its guest's ``config_drive``
        (base64), placed on the destination with the prepare."""
        # preempted, or not the task's source: refused
        self.db.update_progress(ctx, instance_uuid, host=host, percent=0)
        inst = self.db.get_instance(instance_uuid)
        dest = next(a['host'] for a in self.db.list_allocations(
            instance_uuid=instance_uuid) if a['purpose'] == 'migration')
        extra = {}
        if (carried or {}).get('config_drive'):
            extra['config_drive'] = carried['config_drive']
        try:
            return self._prepare_incoming(ctx, inst, dest, extra)
        except MigrationNotPrepared as err:
            raise exception.Conflict(str(err)) from None

    def _migration_dest(self, task_ctx, inst, params):
        return self.scheduler.select_and_allocate(
            task_ctx, inst['uuid'], flavors.of_instance(inst),
            purpose='migration', only=params.get('host'),
            exclude=[inst['host']])

    def send(self, task_ctx, host, inst, action, params, *, claimed=None):
        """``claimed``: the table's action when the agent is sent another
        (an evacuation's build: :mod:`conductor.evacuate`)."""
        payload = gw.payload(inst)
        params = self.images.task_params(host, payload, action, params)
        if action in GUEST_TASKS:
            params = dict(params, **guest_params(
                inst, lambda: self.db.host_zones([host]).get(
                    host, self.conf.default_availability_zone)))
        self.delivery.send(task_ctx, host, payload, action, params,
                           claimed=claimed)

    def update_policies(self, ctx, instance_uuid, policies):
        validate_policies(policies)
        gw.check_owner(ctx, self.db.get_instance(instance_uuid))
        return self.db.set_policies(instance_uuid,
                                    user_shutdown=policies.get('user_shutdown'),
                                    crash=policies.get('crash'))

    def get_diagnostics(self, ctx, instance_uuid):
        """The diagnostics the instance's host reads of its domain (RPC
        1.12, agent 1.4): Nova's 409 when it is on no host or the host has
        no domain for it, 503 when the host does not answer."""
        inst = gw.check_owner(ctx, self.db.get_instance(instance_uuid))
        if not inst['host']:
            raise exception.Conflict('Instance %s is not ready: it is on no '
                                     'host' % instance_uuid)
        try:
            found = self.compute.get_diagnostics(
                ctx, host=inst['host'], instance_uuid=instance_uuid,
                timeout=self.conf.conductor.task_delivery_timeout)
        except rpc.MessagingTimeout:
            raise exception.ServiceUnavailable(
                reason='host %s did not answer for the diagnostics of %s'
                % (inst['host'], instance_uuid)) from None
        if found is None or 'error' in found:
            raise exception.Conflict(
                'Instance %s has no diagnostics on host %s: %s' % (
                    instance_uuid, inst['host'], 'no domain' if found is None
                    else found['error']))
        return found

    def update_attributes(self, ctx, instance_uuid, changes):
        """Name, description, user metadata, tags or the lock of one
        instance (common/db/attributes.py); no task, so it never waits
        for one. The owner check and the lock's run on the row the change
        reads; unlocking what an admin locked takes an admin."""
        if 'name' in changes:
            validate_name(changes['name'])

        def check(inst):
            gw.check_owner(ctx, inst)
            actions.refuse_if_locked(inst, ctx, _locking_name(changes))
            _refuse_attribute_state(inst, changes)
            lock = changes.get('lock')
            if (lock and not lock['locked'] and not ctx.is_admin
                    and inst.get('locked_by') == 'admin'):
                raise exception.Forbidden(
                    action='unlocking a server an admin locked (admin only)')
        before, after = self.db.update_attributes(
            instance_uuid, changes, check=check,
            metadata_items=None)
        if 'name' in changes:
            self.gateway.notify_renamed(ctx, before, after)
        return after

    def rename(self, ctx, instance_uuid, name):
        """A new display name; no task, so it never waits for one."""
        validate_name(name)
        gw.check_owner(ctx, self.db.get_instance(instance_uuid))
        before, after = self.db.rename_instance(instance_uuid, name=name)
        self.gateway.notify_renamed(ctx, before, after)
        return after

    # --- delete ----------------------------------------------------------------------

    def delete(self, ctx, instance_uuid):
        """Hard delete; its host, and the destination of a move it
        preempted, are told at once to destroy the domain (and again by
        each of their reports, as for any hard-deleted instance)."""
        after = self.gateway.hard_delete(ctx, instance_uuid)
        self.destroy_everywhere(ctx, after, after.pop('doomed_hosts', ()))
        self.shelving.forget_snapshot(after.get('shelved_image_id'),
                                      instance_uuid)
        return after

    def reset_state(self, ctx, instance_uuid, state):
        """Admin reset; the destination of a move it preempted is told
        at once to destroy its copy (and again by each of its reports:
        :meth:`common.db.domains.DomainsMixin.doomed_on`)."""
        sched = self.conf.scheduler
        after = self.gateway.reset_state(
            ctx, instance_uuid, state,
            ratios=(sched.cpu_allocation_ratio, sched.ram_allocation_ratio,
                    sched.disk_allocation_ratio))
        for host in after.pop('doomed_hosts', ()):
            self.request_destroy(ctx, {'uuid': instance_uuid, 'host': host})
        return after

    def destroy_everywhere(self, ctx, inst, doomed_hosts=()):
        """:meth:`request_destroy` on the instance's host and on each of
        ``doomed_hosts`` (a preempted move's destinations)."""
        self.request_destroy(ctx, inst)
        if doomed_hosts:       # a move preempted: its image in transit goes
            self.cold.forget_images(inst['uuid'])
        for host in doomed_hosts:
            if host != inst.get('host'):
                self.request_destroy(ctx, {'uuid': inst['uuid'],
                                           'host': host})

    def request_destroy(self, ctx, inst):
        """Best effort: the agent's next report triggers it again if lost."""
        if not inst.get('host'):
            return
        try:
            self.compute.destroy_domain(ctx, host=inst['host'],
                                        instance_uuid=inst['uuid'])
        except Exception:
            LOG.warning('Could not ask host %s to destroy %s; its next power '
                        'report will', inst['host'], inst['uuid'],
                        exc_info=True)

    def reclaim(self, ctx, now):
        """Hard-delete instances soft-deleted longer than the interval."""
        interval = self.conf.conductor.reclaim_instance_interval
        if interval <= 0:
            return 0
        due = self.db.list_soft_deleted(
            before=now - datetime.timedelta(seconds=interval))
        for inst in due:
            LOG.info('Reclaiming instance %s, soft-deleted at %s',
                     inst['uuid'], inst['soft_deleted_at'])
            self.delete(ctx, inst['uuid'])
        return len(due)


def _started(inst, task_ctx):
    """The row as it is now, plus the task the request started: the task
    may have ended already (a fast agent), ``task_id`` then being None."""
    return dict(inst, started_task_id=task_ctx.task_id)
