"""``openstack tristate ...``: Tristate's own commands as an
openstackclient plugin.

    openstack tristate server show SERVER      # vm_state, task_id, oper_state, policies
    openstack tristate server list [--name RE] [--host H] [--project P]
    openstack tristate server actions SERVER   # the action log, with task ids
    openstack tristate server set-policy SERVER --crash stop
    openstack tristate host list
    openstack tristate host disable HOST [--reason R] | enable HOST
    openstack tristate host drain HOST [--cold] [--reason R] [--timeout S]
    openstack tristate lease create|list|show|update|delete
    openstack tristate lease host add|remove|list

The commands are the ``tristate`` command line's own (same options, same
columns); openstackclient supplies the session (its ``--os-cloud``,
``OS_*``, Keystone or ``admin_token``) and the compute endpoint (the
catalog's ``compute``, or ``compute_endpoint_override``). Registered by
the ``openstack.cli.extension`` and ``openstack.tristate.v1`` entry points
(setup.cfg). Everything Nova has is openstackclient's own command.
"""

from api.cli import catalog
from api.cli import client as client_mod
from api.cli import hosts
from api.cli import leases
from api.cli import servers

API_NAME = 'tristate'
API_VERSION_OPTION = 'os_tristate_api_version'
API_VERSIONS = {'1': 'api.cli.client.ApiClient'}
DEFAULT_API_VERSION = '1'
# Requests ask for the latest microversion: Tristate's keys are there.
MICROVERSION = 'latest'
TIMEOUT = 30.0


def make_client(instance):
    """The compute API's client over openstackclient's session."""
    url = instance.get_endpoint_for_service_type(
        'compute', region_name=instance.region_name,
        interface=instance.interface)
    return client_mod.ApiClient(url, session=instance.session,
                                microversion=MICROVERSION, timeout=TIMEOUT)


def build_option_parser(parser):
    parser.add_argument(
        '--os-tristate-api-version', metavar='<version>',
        default=DEFAULT_API_VERSION,
        help='Tristate plugin API version (only 1).')
    return parser


class _App:
    """What the ``tristate`` commands read from their app, taken from
    openstackclient's shell: ``client`` is the plugin's client."""

    def __init__(self, shell):
        self._shell = shell

    @property
    def client(self):
        return self._shell.client_manager.tristate

    def __getattr__(self, name):
        return getattr(self._shell, name)


def _plugin(cls):
    def __init__(self, app, app_args, cmd_name=None):
        cls.__init__(self, _App(app), app_args, cmd_name)
    return type('Tristate%s' % cls.__name__, (cls,),
                {'__init__': __init__, '__doc__': cls.__doc__})


ServerShow = _plugin(servers.ShowServer)
ServerList = _plugin(servers.ListServers)
ServerActions = _plugin(servers.ServerActions)
ServerSetPolicy = _plugin(servers.SetPolicy)
HostList = _plugin(catalog.ListHosts)
HostDisable = _plugin(hosts.DisableHost)
HostEnable = _plugin(hosts.EnableHost)
HostDrain = _plugin(hosts.DrainHost)
LeaseCreate = _plugin(leases.CreateLease)
LeaseList = _plugin(leases.ListLeases)
LeaseShow = _plugin(leases.ShowLease)
LeaseUpdate = _plugin(leases.UpdateLease)
LeaseDelete = _plugin(leases.DeleteLease)
LeaseHostList = _plugin(leases.ListPoolHosts)
LeaseHostAdd = _plugin(leases.AddPoolHost)
LeaseHostRemove = _plugin(leases.RemovePoolHost)
