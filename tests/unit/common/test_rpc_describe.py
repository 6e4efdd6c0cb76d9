"""The line a daemon logs about its bus names the broker, the user and the
TLS settings in use, and never the password."""

import pytest
from oslo_config import cfg

from common import rpc


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    rpc.register_opts(conf)
    conf([], project='tristate', default_config_files=[])
    yield conf
    conf.reset()


URL = 'rabbit://tristate-compute:s3cret@ctl1:5671,tristate-compute:s3cret@ctl2:5671/tristate'


def test_plain(conf):
    assert rpc.describe_transport(conf, URL) == (
        'rabbit://tristate-compute@ctl1:5671,tristate-compute@ctl2:5671/'
        'tristate, plain AMQP')


def test_tls_with_a_ca_and_a_client_certificate(conf):
    conf.set_override('ssl', True, group='oslo_messaging_rabbit')
    conf.set_override('ssl_ca_file', '/etc/tristate/ca.pem',
                      group='oslo_messaging_rabbit')
    conf.set_override('ssl_cert_file', '/etc/tristate/client.pem',
                      group='oslo_messaging_rabbit')
    described = rpc.describe_transport(conf, URL)
    assert described.endswith(', TLS (CA /etc/tristate/ca.pem, client '
                              'certificate /etc/tristate/client.pem)')
    assert 's3cret' not in described


def test_tls_on_the_system_cas(conf):
    conf.set_override('ssl', True, group='oslo_messaging_rabbit')
    assert rpc.describe_transport(conf, URL).endswith(
        ', TLS (CA the system CAs)')


def test_the_configured_url_by_default(conf):
    conf.set_override('transport_url', 'rabbit://u:p@h:5672/')
    assert rpc.describe_transport(conf) == 'rabbit://u@h:5672/, plain AMQP'
