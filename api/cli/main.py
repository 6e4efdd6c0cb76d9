"""``tristate``: the command line over the REST API (cliff).

    tristate [--os-endpoint URL] [--os-token USER:PROJECT] COMMAND ...
    tristate server create web1 --flavor small --wait
    tristate server list [-f json]
    tristate server stop web1 --wait
    tristate server actions web1
    tristate host list
    tristate flavor list
    tristate image create debian-12 --file /tmp/disk.raw
    tristate image list
    tristate lease create night --start now --end "2026-01-02 06:00"

The endpoint is ``--os-endpoint``, else ``TRISTATE_ENDPOINT``, else
http://127.0.0.1:8774 (``tristate-all``'s). Tables for people, ``-f json``
(or csv, value, yaml) for scripts. An error prints the API's reason and the
command exits 1.
"""

import os
import sys

from cliff import app
from cliff import commandmanager

from api.cli import catalog
from api.cli import client as client_mod
from api.cli import images
from api.cli import leases
from api.cli import servers


class TristateApp(app.App):
    NAME = 'tristate'

    def __init__(self):
        manager = commandmanager.CommandManager('tristate.cli')
        for name, cls in {**servers.commands(), **catalog.commands(),
                          **images.commands(), **leases.commands()}.items():
            manager.add_command(name, cls)
        super().__init__(description=__doc__.split('\n\n')[0],
                         version='0.1.0', command_manager=manager,
                         deferred_help=True)
        self.client = None
        self.images = None

    def build_option_parser(self, description, version, argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        env = os.environ.get
        parser.add_argument(
            '--os-endpoint', metavar='URL',
            default=env('TRISTATE_ENDPOINT', client_mod.DEFAULT_ENDPOINT),
            help='The API (env TRISTATE_ENDPOINT; default %s).'
                 % client_mod.DEFAULT_ENDPOINT)
        parser.add_argument(
            '--os-token', metavar='TOKEN', default=env('TRISTATE_TOKEN'),
            help='X-Auth-Token: USER:PROJECT with noauth, a Keystone token '
                 'otherwise (env TRISTATE_TOKEN; default none: the API\'s '
                 'default user).')
        parser.add_argument(
            '--os-image-endpoint', metavar='URL',
            default=env('TRISTATE_IMAGE_ENDPOINT'),
            help='The image API (Glance v2; env TRISTATE_IMAGE_ENDPOINT; '
                 'default: /image on the API\'s endpoint).')
        parser.add_argument(
            '--os-compute-api-version', metavar='X.Y',
            default=env('TRISTATE_API_VERSION', 'latest'),
            help='Microversion to ask for (env TRISTATE_API_VERSION; '
                 'default latest).')
        parser.add_argument(
            '--http-timeout', type=float, default=30.0, metavar='SECONDS',
            help='Seconds one HTTP request may take. Default: 30.')
        return parser

    def initialize_app(self, argv):
        options = self.options
        self.client = client_mod.ApiClient(
            options.os_endpoint, token=options.os_token,
            microversion=options.os_compute_api_version,
            timeout=options.http_timeout)
        self.images = images.ImageService(
            options.os_image_endpoint
            or images.image_endpoint(options.os_endpoint),
            token=options.os_token, timeout=options.http_timeout)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        argv = ['--help']       # not cliff's interactive shell
    return TristateApp().run(argv)
