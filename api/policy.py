"""Who may do what through the API: oslo.policy rules with defaults in code.

A project sees and acts on its own servers only; admins act on all. Actions
the table marks ``admin_only`` (live migration, reset_state), listing every
project's servers and listing hosts need admin. An operator overrides any
rule in ``[oslo_policy] policy_file`` (YAML); ``oslopolicy-sample-generator
--namespace tristate`` prints them all. The conductor re-checks ownership.
"""

import time

from oslo_policy import policy

from common import actions as table
from common import exception

ADMIN = 'rule:context_is_admin'
OWNER = 'rule:admin_or_owner'
ANYONE = ''

SERVERS = 'tristate:servers:%s'
LEASES = 'tristate:leases:%s'
# Blazar's v1 (api/reservation), and the leases' reservable pool in it.
BLAZAR = '/reservation/v1'
POOL = BLAZAR + '/os-hosts'


def _rule(name, check, description, *operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations])


def _action_rules():
    """One rule per action of the table, admin-only where the table says."""
    rules = []
    for action in table.ACTIONS.values():
        if action.name in ('build', 'delete') or action.system:
            continue    # POST /servers and DELETE have their own; reconcile's
            # tasks are never asked for
        rules.append(_rule(
            SERVERS % 'action:%s' % action.name,
            ADMIN if action.admin_only else OWNER,
            'Run %s on a server: %s.' % (action.name, action.description),
            ('POST', '/servers/{server_id}/action')))
    return rules


def list_rules():
    """Every default rule (the ``oslo.policy.policies`` entry point)."""
    return [
        policy.RuleDefault('context_is_admin', 'role:admin',
                           description='Who is an administrator.'),
        policy.RuleDefault('admin_or_owner',
                           'rule:context_is_admin or '
                           'project_id:%(project_id)s',
                           description='An admin, or the server\'s project.'),
        _rule(SERVERS % 'index', ANYONE, 'List the project\'s servers.',
              ('GET', '/servers'), ('GET', '/servers/detail')),
        _rule(SERVERS % 'index:all_tenants', ADMIN,
              'List the servers of every project (all_tenants).',
              ('GET', '/servers?all_tenants=1')),
        _rule(SERVERS % 'show', OWNER, 'Show a server.',
              ('GET', '/servers/{server_id}')),
        _rule(SERVERS % 'show:extended_attributes', ADMIN,
              'See where a server runs: its OS-EXT-SRV-ATTR:host, '
              'hypervisor_hostname and instance_name (Nova\'s '
              'os_compute_api:os-extended-server-attributes).',
              ('GET', '/servers/{server_id}'), ('GET', '/servers/detail')),
        _rule(SERVERS % 'show:host_status', ADMIN,
              'See whether a server\'s host is up: its host_status (Nova\'s '
              'os_compute_api:servers:show:host_status).',
              ('GET', '/servers/{server_id}'), ('GET', '/servers/detail')),
        _rule(SERVERS % 'allow_all_filters', ADMIN,
              'Filter server lists by any filter; without this, only the '
              'filters Nova allows every project apply and the others are '
              'dropped, as in Nova (os_compute_api:servers:'
              'allow_all_filters).',
              ('GET', '/servers'), ('GET', '/servers/detail')),
        _rule(SERVERS % 'create', ANYONE, 'Create a server.',
              ('POST', '/servers')),
        _rule(SERVERS % 'update', OWNER, 'Rename a server.',
              ('PUT', '/servers/{server_id}')),
        _rule(SERVERS % 'delete', OWNER, 'Delete a server (hard delete).',
              ('DELETE', '/servers/{server_id}'),
              ('POST', '/servers/{server_id}/action (forceDelete)')),
        _rule(SERVERS % 'diagnostics', ADMIN,
              'Show what the hypervisor measures of a server (Nova\'s '
              'os_compute_api:os-server-diagnostics).',
              ('GET', '/servers/{server_id}/diagnostics')),
        _rule(SERVERS % 'topology', OWNER,
              'Show a server\'s guest NUMA cells (2.78; Nova\'s '
              'compute:server:topology:index).',
              ('GET', '/servers/{server_id}/topology')),
        _rule(SERVERS % 'topology:host_info', ADMIN,
              'See the host side of a server\'s NUMA cells: its '
              'cpu_pinning (Nova\'s compute:server:topology:host:index; '
              'Tristate pins nothing, so it is empty).',
              ('GET', '/servers/{server_id}/topology')),
        _rule(SERVERS % 'metadata:show', OWNER,
              'Show a server\'s metadata (and its reconcile policies).',
              ('GET', '/servers/{server_id}/metadata'),
              ('GET', '/servers/{server_id}/metadata/{key}')),
        _rule(SERVERS % 'metadata:update', OWNER,
              'Change a server\'s metadata (and reconcile policies).',
              ('PUT', '/servers/{server_id}/metadata'),
              ('POST', '/servers/{server_id}/metadata'),
              ('PUT', '/servers/{server_id}/metadata/{key}'),
              ('DELETE', '/servers/{server_id}/metadata/{key}')),
    ] + _attribute_rules() + [
        _rule(SERVERS % 'instance_actions:list', OWNER,
              'List a server\'s action log.',
              ('GET', '/servers/{server_id}/os-instance-actions')),
        _rule(SERVERS % 'instance_actions:events', ADMIN,
              'See the events of an action in full (their traceback and '
              'host); below microversion 2.51, see events at all.',
              ('GET', '/servers/{server_id}/os-instance-actions/'
                      '{request_id}')),
        _rule('tristate:hypervisors:index', ADMIN,
              'List hosts with capacity, usage and up/down; show one, its '
              'servers, uptime and the statistics.',
              ('GET', '/os-hypervisors/detail'),
              ('GET', '/os-hypervisors/{hypervisor_id}')),
    ] + (_action_rules() + _lease_rules() + _accounting_rules()
         + _catalogue_rules() + _zone_rules() + _keypair_rules()
         + _server_group_rules())


def _server_group_rules():
    """Server groups are a project's (Nova's defaults); an admin lists
    every project's with ``all_projects``."""
    path = '/os-server-groups'
    rule = 'tristate:os-server-groups:%s'
    return [
        _rule(rule % 'index', OWNER, 'List the project\'s server groups.',
              ('GET', path)),
        _rule(rule % 'index:all_projects', ADMIN,
              'List every project\'s server groups (all_projects).',
              ('GET', path)),
        _rule(rule % 'create', OWNER, 'Create a server group.',
              ('POST', path)),
        _rule(rule % 'show', OWNER, 'Show a server group; join it with '
              'the group scheduler hint of a create.',
              ('GET', path + '/{server_group_id}'), ('POST', '/servers')),
        _rule(rule % 'delete', OWNER, 'Delete a server group.',
              ('DELETE', path + '/{server_group_id}')),
    ]


# An admin, or the user the key pair belongs to (Nova's default).
ADMIN_OR_USER = 'rule:context_is_admin or user_id:%(user_id)s'


def _keypair_rules():
    """Key pairs are a user's (Nova's defaults): the user, or an admin
    naming the user with ``user_id`` (2.10)."""
    path = '/os-keypairs'
    return [
        _rule('tristate:keypairs:index', ADMIN_OR_USER,
              'List a user\'s key pairs.', ('GET', path)),
        _rule('tristate:keypairs:create', ADMIN_OR_USER,
              'Create or import a key pair.', ('POST', path)),
        _rule('tristate:keypairs:show', ADMIN_OR_USER, 'Show a key pair.',
              ('GET', path + '/{keypair_name}')),
        _rule('tristate:keypairs:delete', ADMIN_OR_USER,
              'Delete a key pair.', ('DELETE', path + '/{keypair_name}')),
    ]


def _catalogue_rules():
    """Flavors, limits, quota classes and services (Nova's defaults)."""
    return [
        _rule('tristate:flavors:index', ANYONE, 'List and show flavors.',
              ('GET', '/flavors'), ('GET', '/flavors/{flavor_id}')),
        _rule('tristate:flavors:manage', ADMIN, 'Create and delete flavors, '
              'change their description.', ('POST', '/flavors'),
              ('PUT', '/flavors/{flavor_id}'),
              ('DELETE', '/flavors/{flavor_id}')),
        _rule('tristate:flavors:extra_specs:index', ANYONE,
              'Show a flavor\'s extra specs.',
              ('GET', '/flavors/{flavor_id}/os-extra_specs')),
        _rule('tristate:flavors:extra_specs:manage', ADMIN,
              'Set and delete a flavor\'s extra specs.',
              ('POST', '/flavors/{flavor_id}/os-extra_specs'),
              ('PUT', '/flavors/{flavor_id}/os-extra_specs/{key}'),
              ('DELETE', '/flavors/{flavor_id}/os-extra_specs/{key}')),
        _rule('tristate:flavors:access', ADMIN,
              'List and change the projects that may use a private flavor.',
              ('GET', '/flavors/{flavor_id}/os-flavor-access'),
              ('POST', '/flavors/{flavor_id}/action')),
        _rule('tristate:limits', ANYONE, 'Show the project\'s limits.',
              ('GET', '/limits')),
        _rule('tristate:limits:other_project', ADMIN,
              'Show another project\'s limits (tenant_id).',
              ('GET', '/limits?tenant_id={project_id}')),
        _rule('tristate:quota_classes', ADMIN,
              'Show and set the default quota class.',
              ('GET', '/os-quota-class-sets/{class}'),
              ('PUT', '/os-quota-class-sets/{class}')),
        _rule('tristate:networks:index', ANYONE, 'List and show the '
              'networks the project may use (its own and the shared).',
              ('GET', '/os-networks'), ('GET', '/os-networks/{network_id}')),
        _rule('tristate:networks:manage', ADMIN, 'Create and delete '
              'networks (microversion 2.101).',
              ('POST', '/os-networks'),
              ('DELETE', '/os-networks/{network_id}')),
        _rule(SERVERS % 'ips', OWNER, 'Show a server\'s addresses.',
              ('GET', '/servers/{server_id}/ips'),
              ('GET', '/servers/{server_id}/ips/{network}')),
        _rule('tristate:services', ADMIN, 'List, disable, enable, force '
              'down and delete services; read the usage audit log.',
              ('GET', '/os-services'), ('PUT', '/os-services/{service_id}'),
              ('DELETE', '/os-services/{service_id}'),
              ('GET', '/os-instance_usage_audit_log')),
        _rule('tristate:server_external_events',
              'role:service or ' + ADMIN,
              'Tell of external events (Nova\'s os-server-external-events: '
              'the service role, or an admin).',
              ('POST', '/os-server-external-events')),
        _rule('tristate:extensions', ANYONE, 'List the API extensions.',
              ('GET', '/extensions')),
    ]


def _zone_rules():
    """Aggregates, availability zones and migrations (Nova's defaults)."""
    return [
        _rule('tristate:aggregates', ADMIN, 'List, show, create, update '
              'and delete host aggregates; add and remove hosts; set their '
              'metadata.', ('GET', '/os-aggregates'),
              ('POST', '/os-aggregates'),
              ('GET', '/os-aggregates/{aggregate_id}'),
              ('PUT', '/os-aggregates/{aggregate_id}'),
              ('DELETE', '/os-aggregates/{aggregate_id}'),
              ('POST', '/os-aggregates/{aggregate_id}/action')),
        _rule('tristate:availability_zone:list', ANYONE,
              'List the availability zones.',
              ('GET', '/os-availability-zone')),
        _rule('tristate:availability_zone:detail', ADMIN,
              'List the availability zones with their hosts and services.',
              ('GET', '/os-availability-zone/detail')),
        _rule(SERVERS % 'create:forced_host', ADMIN,
              'Build a server on a given host (availability_zone '
              'ZONE:HOST or ZONE::NODE).', ('POST', '/servers')),
        _rule('tristate:migrations:index', ADMIN,
              'List the migrations (resizes and live migrations) of every '
              'server, or of one.', ('GET', '/os-migrations'),
              ('GET', '/servers/{server_id}/migrations')),
    ]


def _attribute_rules():
    """Tags, lock, password and console output (issue 22)."""
    return [
        _rule(SERVERS % 'tags:show', OWNER, 'Show a server\'s tags.',
              ('GET', '/servers/{server_id}/tags'),
              ('GET', '/servers/{server_id}/tags/{tag}')),
        _rule(SERVERS % 'tags:update', OWNER, 'Change a server\'s tags.',
              ('PUT', '/servers/{server_id}/tags'),
              ('DELETE', '/servers/{server_id}/tags'),
              ('PUT', '/servers/{server_id}/tags/{tag}'),
              ('DELETE', '/servers/{server_id}/tags/{tag}')),
        _rule(SERVERS % 'action:unshelve_to_host', ADMIN,
              'Unshelve an offloaded server onto a host named in the '
              'request (from 2.91).',
              ('POST', '/servers/{server_id}/action')),
        _rule(SERVERS % 'action:lock', OWNER, 'Lock a server.',
              ('POST', '/servers/{server_id}/action (lock)')),
        _rule(SERVERS % 'action:unlock', OWNER, 'Unlock a server (one an '
              'admin locked: admins only).',
              ('POST', '/servers/{server_id}/action (unlock)')),
        _rule(SERVERS % 'action:get_console_output', OWNER,
              'Read a server\'s console output.',
              ('POST', '/servers/{server_id}/action (os-getConsoleOutput)')),
        _rule(SERVERS % 'remote_consoles', OWNER,
              'Open a server\'s serial console (a one-time URL).',
              ('POST', '/servers/{server_id}/remote-consoles')),
        _rule(SERVERS % 'action:get_serial_console', OWNER,
              'Open a server\'s serial console (Nova 2.1\'s action).',
              ('POST', '/servers/{server_id}/action (os-getSerialConsole)')),
        _rule(SERVERS % 'action:get_vnc_console', OWNER,
              'Open a server\'s VNC console (not built: 400).',
              ('POST', '/servers/{server_id}/action (os-getVNCConsole)')),
        _rule(SERVERS % 'password:show', OWNER,
              'Show a server\'s encrypted password.',
              ('GET', '/servers/{server_id}/os-server-password')),
        _rule(SERVERS % 'password:clear', OWNER,
              'Clear a server\'s encrypted password.',
              ('DELETE', '/servers/{server_id}/os-server-password')),
    ]


def _accounting_rules():
    """Quotas and usage (Nova's defaults): admins set quotas and read every
    project's usage; a project reads its own."""
    return [
        _rule('tristate:quotas:show', OWNER, 'Show a project\'s quotas '
              '(limits, and usage with /detail).',
              ('GET', '/os-quota-sets/{project_id}'),
              ('GET', '/os-quota-sets/{project_id}/detail')),
        _rule('tristate:quotas:defaults', ANYONE, 'Show the default quotas.',
              ('GET', '/os-quota-sets/{project_id}/defaults')),
        _rule('tristate:quotas:update', ADMIN, 'Set a project\'s quotas.',
              ('PUT', '/os-quota-sets/{project_id}')),
        _rule('tristate:usage:index', ADMIN, 'Usage of every project.',
              ('GET', '/os-simple-tenant-usage')),
        _rule('tristate:usage:show', OWNER, 'Usage of one project.',
              ('GET', '/os-simple-tenant-usage/{project_id}')),
    ]


def _lease_rules():
    """Leases (Blazar's defaults): a project reserves hosts for itself.
    Each rule holds for both faces: ``/v2.1/leases`` and Blazar's
    ``/reservation/v1/leases``."""
    one = '/leases/{lease_id}'
    return [
        _rule(LEASES % 'index', ANYONE, 'List the project\'s leases.',
              ('GET', '/leases'), ('GET', BLAZAR + '/leases')),
        _rule(LEASES % 'index:all_projects', ADMIN,
              'List the leases of every project (all_projects; Blazar\'s '
              'list shows them to whom this allows).',
              ('GET', '/leases?all_projects=1'), ('GET', BLAZAR + '/leases')),
        _rule(LEASES % 'show', OWNER, 'Show a lease.',
              ('GET', one), ('GET', BLAZAR + one)),
        _rule(LEASES % 'create', ANYONE, 'Reserve hosts: create a lease.',
              ('POST', '/leases'), ('POST', BLAZAR + '/leases')),
        _rule(LEASES % 'update', OWNER, 'Change a lease\'s dates, name or '
              'on_end.', ('PUT', one), ('PUT', BLAZAR + one)),
        _rule(LEASES % 'delete', OWNER, 'Delete a lease (an active one '
              'ends first).', ('DELETE', one), ('DELETE', BLAZAR + one)),
        _rule(LEASES % 'hosts:index', ADMIN, 'List the hosts of the '
              'reservable pool.', ('GET', POOL), ('GET', POOL + '/{host}')),
        _rule(LEASES % 'hosts:add', ADMIN, 'Put a host into the reservable '
              'pool (only its hosts can be leased).', ('POST', POOL)),
        _rule(LEASES % 'hosts:remove', ADMIN, 'Take a host out of the '
              'reservable pool.', ('DELETE', POOL + '/{host}')),
    ]


def _frozen(values):
    """A hashable, order-free copy of a dict of creds or of a target."""
    return tuple(sorted(
        (key, tuple(value) if isinstance(value, (list, set)) else value)
        for key, value in values.items()))


class Policy:
    """The enforcer of one API application.

    Decisions are remembered for ``memory`` seconds (1 by default), keyed
    by the rule, the whole of the caller's credentials and the target: a
    decision is a pure function of those and the rules, and oslo.policy's
    enforce (which looks at the policy file and inspects each check every
    time) cost a quarter of a request. An edited policy file therefore
    takes effect within a second, as before within a request.
    """

    _MAX_REMEMBERED = 4096

    def __init__(self, conf, *, memory=1.0, clock=time.monotonic):
        self.enforcer = policy.Enforcer(conf)
        self.enforcer.register_defaults(list_rules())
        self.memory = memory
        self.clock = clock
        self._decided = {}

    def authorize(self, ctx, rule, target=None):
        """Raise :class:`~common.exception.Forbidden` (403) unless allowed."""
        creds = ctx.to_policy_values()
        creds['is_admin'] = ctx.is_admin
        target = target if target is not None else {
            'project_id': ctx.project_id}
        key = (rule, _frozen(creds), _frozen(target))
        now = self.clock()
        found = self._decided.get(key)
        if found is not None and found[0] > now:
            if not found[1]:
                raise exception.Forbidden(action=rule)
            return
        try:
            self.enforcer.authorize(rule, target, creds, do_raise=True,
                                    exc=exception.Forbidden, action=rule)
        except exception.Forbidden:
            self._remember(key, now, False)
            raise
        self._remember(key, now, True)

    def _remember(self, key, now, allowed):
        if len(self._decided) >= self._MAX_REMEMBERED:
            self._decided = {}
        self._decided[key] = (now + self.memory, allowed)

    def allows(self, ctx, rule, target=None):
        try:
            self.authorize(ctx, rule, target)
        except exception.Forbidden:
            return False
        return True
