"""``tristate``: the command line over the REST API (cliff).

    tristate [--os-cloud NAME | --os-endpoint URL --os-token USER:PROJECT] COMMAND
    tristate server create web1 --flavor small --wait
    tristate server list [--name RE] [--host H] [--project P] [-f json]
    tristate server stop web1 --wait
    tristate server actions web1
    tristate server event list web1
    tristate host list
    tristate host disable|enable HOST, tristate host drain HOST
    tristate hypervisor list|show
    tristate flavor list
    tristate quota show|set, tristate usage show|list
    tristate image create debian-12 --file /tmp/disk.raw
    tristate image list
    tristate lease create night --start now --end "2026-01-02 06:00"
    tristate aggregate create --zone east rack-1
    tristate aggregate add host rack-1 host1
    tristate availability-zone list [--long]

Who you are and where the API is follow openstackclient
(:mod:`api.cli.auth`): ``--os-cloud``/``OS_CLOUD`` and ``clouds.yaml``,
``OS_*`` variables and keystoneauth's ``--os-auth-type`` plugins, read by
openstacksdk's and keystoneauth's loaders. Without them: ``--os-endpoint``
(``TRISTATE_ENDPOINT``, default http://127.0.0.1:8774, ``tristate-all``'s)
and ``--os-token`` (``TRISTATE_TOKEN``). Tables for people, ``-f json``
(or csv, value, yaml) for scripts. An error prints the API's reason and the
command exits 1; so does ``--wait`` when the task failed.
"""

import os
import sys

from cliff import app
from cliff import commandmanager
import openstack.config

from api.cli import accounting
from api.cli import aggregates
from api.cli import auth
from api.cli import catalog
from api.cli import client as client_mod
from api.cli import consoles
from api.cli import events
from api.cli import hosts
from api.cli import images
from api.cli import keypairs
from api.cli import leases
from api.cli import networks
from api.cli import servers
from api.cli import zones

COMMAND_MODULES = (servers, events, catalog, accounting, images, leases,
                   aggregates, zones, networks, keypairs, consoles, hosts)


class TristateApp(app.App):
    NAME = 'tristate'

    def __init__(self, argv=()):
        self.argv = list(argv)
        self.cloud_config = openstack.config.OpenStackConfig()
        manager = commandmanager.CommandManager('tristate.cli')
        for module in COMMAND_MODULES:
            for name, cls in module.commands().items():
                manager.add_command(name, cls)
        super().__init__(description=__doc__.split('\n\n')[0],
                         version='0.1.0', command_manager=manager,
                         deferred_help=True)
        self._client = None
        self._images = None
        self._project = None
        self._region = self._session = None

    def build_option_parser(self, description, version, argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        auth.register(parser, self.argv, self.cloud_config)
        env = os.environ.get
        parser.add_argument(
            '--os-compute-api-version', metavar='X.Y',
            default=env('TRISTATE_API_VERSION',
                        env('OS_COMPUTE_API_VERSION', 'latest')),
            help='Microversion to ask for (env TRISTATE_API_VERSION or '
                 'OS_COMPUTE_API_VERSION; default latest).')
        parser.add_argument(
            '--http-timeout', type=float, default=30.0, metavar='SECONDS',
            help='Seconds one HTTP request may take. Default: 30.')
        return parser

    def _connect(self):
        """The session and project of the credentials, once."""
        if self._session is None:
            region = auth.cloud_region(self.options, self.cloud_config)
            session = region.get_session()
            self._project = auth.project_id(region, session)
            self._region, self._session = region, session
        return self._region, self._session

    @property
    def client(self):
        """The compute API's client, made at first use (``help`` needs
        none)."""
        if self._client is None:
            region, session = self._connect()
            self._client = client_mod.ApiClient(
                auth.endpoint(region, session, 'compute'), session=session,
                microversion=self.options.os_compute_api_version,
                timeout=self.options.http_timeout)
        return self._client

    def project_id(self):
        """The project the credentials are scoped to, or None."""
        self._connect()
        return self._project

    @property
    def images(self):
        """The image API's client, made at first use."""
        if self._images is None:
            region, session = self._connect()
            self._images = images.ImageService(
                auth.endpoint(region, session, 'image'), session=session,
                timeout=self.options.http_timeout)
        return self._images


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        argv = ['--help']       # not cliff's interactive shell
    try:
        return TristateApp(argv).run(argv)
    except auth.AuthError as err:
        sys.stderr.write('%s\n' % err)
        return 1
