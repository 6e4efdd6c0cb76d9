"""The sample config and ``oslo-config-validator`` cover every option the
daemons read (issue 20, item 14): Tristate's, and oslo.log's,
oslo.messaging's, oslo.policy's, oslo.middleware's healthcheck and
keystonemiddleware's (with keystoneauth's password plugin), and both
configs shipped in etc/ validate."""

import os
import pathlib
import subprocess
import sys

import pytest

from common.conf import opts

ROOT = pathlib.Path(__file__).resolve().parents[2]
ETC = ROOT / 'etc' / 'tristate'
VALIDATOR_CONF = ETC / 'tristate-config-validator.conf'
VALIDATOR = os.path.join(os.path.dirname(sys.executable),
                         'oslo-config-validator')


def _namespaces(path):
    return tuple(line.split('=', 1)[1].strip()
                 for line in path.read_text().splitlines()
                 if line.replace(' ', '').startswith('namespace='))


@pytest.mark.parametrize('name', ['tristate-config-generator.conf',
                                  'tristate-config-validator.conf'])
def test_the_tools_read_the_namespaces_the_daemons_do(name):
    assert _namespaces(ETC / name) == opts.NAMESPACES


def _validate(path):
    return subprocess.run(
        [VALIDATOR, '--config-file', str(VALIDATOR_CONF), '--input-file',
         str(path), '--fatal-warnings'], capture_output=True, text=True,
        timeout=120, check=False)


@pytest.mark.parametrize('name', ['controller.conf', 'compute.conf'])
def test_each_shipped_config_validates(name):
    done = _validate(ETC / name)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_validator_names_a_misspelt_option(tmp_path):
    path = tmp_path / 'tristate.conf'
    path.write_text((ETC / 'controller.conf').read_text()
                    + '\n[conductor]\nflavours = tiny:1:512:1\n'
                    '[keystone_authtoken]\nusername = tristate\n')
    done = _validate(path)
    assert done.returncode != 0
    assert 'conductor/flavours' in done.stderr
    assert 'username' not in done.stderr        # keystoneauth's, listed


def test_the_sample_has_every_section_a_daemon_reads():
    sample = (ETC / 'tristate.conf.sample').read_text()
    for section in ('[oslo_messaging_rabbit]', '[keystone_authtoken]',
                    '[oslo_policy]', '[healthcheck]'):
        assert section in sample
    for option in ('#transport_url', '#log_file', '#auth_url', '#password',
                   '#www_authenticate_uri'):
        assert option in sample, option
