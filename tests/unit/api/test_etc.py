"""The shipped deployment files: configs name only real options, units
are Type=notify, restart on failure and run as the dedicated user."""

import configparser
import pathlib

import pytest
from oslo_config import cfg
from oslo_log import log as oslo_log

from common import conf as tconf
from common import rpc

ETC = pathlib.Path(__file__).resolve().parents[3] / 'etc'
UNITS = {'tristate-api.service': 'tristate-api',
         'tristate-conductor.service': 'tristate-conductor',
         'tristate-compute-agent.service': 'tristate-compute-agent',
         'tristate-console-proxy.service': 'tristate-console-proxy'}


def _registered():
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    oslo_log.register_options(conf)
    conf([], default_config_files=[])
    groups = {'DEFAULT': {name for name in conf}}
    for name in conf:
        group = getattr(conf, name)
        if isinstance(group, cfg.ConfigOpts.GroupAttr):
            groups[name] = set(group)
    return groups


@pytest.mark.parametrize('name', ['controller.conf', 'compute.conf'])
def test_configs_name_only_real_options(name):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ETC / 'tristate' / name)
    known = _registered()
    for section in ['DEFAULT'] + parser.sections():
        assert section in known, '%s: unknown group [%s]' % (name, section)
        own = (parser[section] if section == 'DEFAULT'
               else {k: v for k, v in parser[section].items()
                     if k not in parser.defaults()})
        for option in own:
            assert option in known[section], '%s: unknown option %s.%s' % (
                name, section, option)


def test_the_agent_config_has_no_database():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ETC / 'tristate' / 'compute.conf')
    assert 'database' not in parser.sections()


@pytest.mark.parametrize('unit, command', sorted(UNITS.items()))
def test_units(unit, command):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(ETC / 'systemd' / unit)
    service = parser['Service']
    assert service['Type'] == 'notify'
    assert service['Restart'] == 'on-failure'
    assert service['User'] == 'tristate'
    exec_start = service['ExecStart'].split()
    assert exec_start[0].endswith('/' + command)
    assert exec_start[1:] == ['--config-file', '/etc/tristate/tristate.conf']
    assert parser['Install']['WantedBy'] == 'multi-user.target'
