"""``tristate keypair create|list|show|delete``: the caller's key pairs
(Nova's ``os-keypairs``). ``create`` imports ``--public-key FILE``, or
makes a key pair here and writes its private key to ``--private-key
FILE`` (mode 0600): the API makes none from microversion 2.92."""

import os

from cliff import command
from cliff import lister
from cliff import show

from common import keypairs as crypto

FIELDS = ('name', 'type', 'fingerprint', 'public_key')


def _shown(keypair):
    return FIELDS, tuple(keypair.get(f) for f in FIELDS)


class CreateKeypair(show.ShowOne):
    """Import a public key, or make a key pair."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', help='Name of the key pair.')
        how = parser.add_mutually_exclusive_group(required=True)
        how.add_argument('--public-key', metavar='FILE',
                         help='An OpenSSH public key file to import.')
        how.add_argument('--private-key', metavar='FILE',
                         help='Make a key pair; write its private key '
                              'here (it is not kept anywhere else).')
        return parser

    def take_action(self, parsed_args):
        if parsed_args.public_key:
            with open(parsed_args.public_key, encoding='utf-8') as f:
                public = f.read().strip()
        else:
            private, public, _ = crypto.generate(crypto.SSH,
                                                 parsed_args.name)
            fd = os.open(parsed_args.private_key,
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, 'w') as f:
                f.write(private)
        made = self.app.client.post('/os-keypairs', {'keypair': {
            'name': parsed_args.name, 'public_key': public}})
        return _shown(made['keypair'])


class ListKeypairs(lister.Lister):
    """Your key pairs."""

    def take_action(self, parsed_args):
        found = self.app.client.get('/os-keypairs')['keypairs']
        return ('Name', 'Type', 'Fingerprint'), [
            (k['keypair']['name'], k['keypair'].get('type'),
             k['keypair']['fingerprint']) for k in found]


class ShowKeypair(show.ShowOne):
    """One of your key pairs."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', help='Name of the key pair.')
        return parser

    def take_action(self, parsed_args):
        return _shown(self.app.client.get(
            '/os-keypairs/%s' % parsed_args.name)['keypair'])


class DeleteKeypair(command.Command):
    """Delete one of your key pairs (servers keep their key)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', help='Name of the key pair.')
        return parser

    def take_action(self, parsed_args):
        self.app.client.delete('/os-keypairs/%s' % parsed_args.name)


def commands():
    return {'keypair create': CreateKeypair, 'keypair list': ListKeypairs,
            'keypair show': ShowKeypair, 'keypair delete': DeleteKeypair}
