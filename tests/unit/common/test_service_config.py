"""A daemon refuses to start on a configuration it cannot use, and says
which option of which file is wrong and what was expected."""

import pytest
from oslo_config import cfg

from common import conf as tconf
from common import rpc
from common import service
from tests import support


@pytest.mark.parametrize('text, expected', [
    ('[conductor]\nperiodic_interval = -5\n',
     ['[conductor] periodic_interval', 'greater than or equal to 1']),
    ('[compute]\ndriver = vmware\n',
     ['[compute] driver', "[fake, libvirt], but found 'vmware'"]),
    ('[fake_driver]\nlatency = spawn:abc\n',
     ['[fake_driver] latency', "'abc'"]),
    ('[oslo_messaging_rabbit]\nheartbeat_timeout_threshold = often\n',
     ['[oslo_messaging_rabbit] heartbeat_timeout_threshold']),
])
def test_a_bad_value_stops_the_start_naming_option_and_file(tmp_path, text,
                                                            expected):
    with pytest.raises(SystemExit) as stop:
        support.prepare(tmp_path, text)
    message = str(stop.value.code)
    assert 'invalid configuration, nothing was started' in message
    for words in expected + [str(tmp_path / 'tristate.conf')]:
        assert words in message, message


def test_every_problem_is_named_at_once(tmp_path):
    with pytest.raises(SystemExit) as stop:
        support.prepare(tmp_path, '[conductor]\nperiodic_interval = 0\n'
                        '[compute]\nheartbeat_interval = fast\n')
    message = str(stop.value.code)
    assert '[conductor] periodic_interval' in message
    assert '[compute] heartbeat_interval' in message


def test_a_good_configuration_has_no_problem(tmp_path):
    # (prepare() itself would also set up logging for the whole process.)
    path = tmp_path / 'tristate.conf'
    path.write_text('[conductor]\nperiodic_interval = 5\n')
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf(['--config-file', str(path)], project='tristate')
    assert conf.conductor.periodic_interval == 5
    assert service.config_problems(conf) == []


def _pem_pair(tmp_path):
    """A self-signed certificate and its key (openssl, as the test broker's
    throwaway CA is made)."""
    return support.self_signed(tmp_path)


@pytest.mark.parametrize('text, expected', [
    ('ssl = true\nssl_ca_file = {missing}\n',
     ['ssl_ca_file: cannot read {missing}: No such file or directory']),
    ('ssl = true\nssl_ca_file = {notpem}\n',
     ['ssl_ca_file: {notpem} holds no usable PEM certificate']),
    ('ssl = true\nssl_ca_file = {cert}\nssl_cert_file = {cert}\n'
     'ssl_key_file = {notpem}\n',
     ['ssl_cert_file: {cert} does not load with its key {notpem}']),
    ('ssl = true\nssl_key_file = {key}\n',
     ['ssl_key_file: set without ssl_cert_file']),
    ('ssl = true\nssl_version = TLSv9\n',
     ["ssl_version: 'TLSv9' is not one of"]),
    ('ssl = true\nssl_version = TLSv1_2\n',
     ['ssl_version: set without ssl_ca_file']),
    ('ssl_ca_file = {cert}\n',
     ['ssl_ca_file: set, but ssl is false']),
])
def test_rabbitmq_tls_settings_that_cannot_work_stop_the_start(
        tmp_path, text, expected):
    cert, key = _pem_pair(tmp_path)
    notpem = tmp_path / 'notpem.txt'
    notpem.write_text('not a certificate\n')
    names = {'cert': cert, 'key': key, 'notpem': notpem,
             'missing': tmp_path / 'missing.pem'}
    with pytest.raises(SystemExit) as stop:
        support.prepare(tmp_path,
                        '[oslo_messaging_rabbit]\n' + text.format(**names))
    message = str(stop.value.code)
    for words in expected:
        assert '[oslo_messaging_rabbit] ' + words.format(**names) in message, (
            message)


def test_working_rabbitmq_tls_settings_have_no_problem(tmp_path):
    cert, key = _pem_pair(tmp_path)
    path = tmp_path / 'tristate.conf'
    path.write_text('[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = %s\n'
                    'ssl_cert_file = %s\nssl_key_file = %s\n'
                    % (cert, cert, key))
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    conf(['--config-file', str(path)], project='tristate')
    assert service.config_problems(conf) == []


def test_each_daemon_stops_by_itself_before_systemd_kills_it():
    """[DEFAULT] graceful_shutdown_timeout's default, per daemon, is under
    the TimeoutStopSec of its unit (issue 20, item 12)."""
    from common.conf import shutdown
    from tests import daemon_support
    for binary, seconds in shutdown.DEFAULTS.items():
        assert seconds < daemon_support.timeout_stop(binary), binary
