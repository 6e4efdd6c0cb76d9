"""A misspelt option or an unknown section was ignored without a word.

``[conductor] flavours = ...`` (for ``flavors``) or a section no daemon
reads left the defaults in force and said nothing (issue 20, item 14).
Fixed: at start each daemon warns, one line each, about every option and
section of its files that none of the namespaces of the sample config
knows (:func:`common.confcheck.unknown_options`), with the closest known
name; it still starts (a typo in an unused option must not take a plane
down). Options of keystonemiddleware and keystoneauth's password plugin,
read only once the API builds its middleware, count as known.
"""

from oslo_config import cfg

from common import conf as tconf
from common import confcheck
from common import rpc
from tests import daemon_support
from tests import support


def _conf(tmp_path, text):
    path = tmp_path / 'tristate.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    conf(['--config-file', str(path)], project='tristate')
    return conf, path


def test_each_unknown_option_and_section_is_named_once(tmp_path):
    conf, path = _conf(tmp_path, (
        '[DEFAULT]\nhots = h1\ntransport_url = rabbit://h/\n'
        '[conductor]\nflavours = tiny:1:512:1\nrpc_timeout = 5\n'
        '[flavors]\ntiny = 1\n'
        '[keystone_authtoken]\nauth_url = http://k:5000\nusername = t\n'
        'password = p\nwww_authenticate_uri = http://k:5000\n'
        '[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n'
        '[healthcheck]\ndetailed = false\n'))
    assert confcheck.unknown_options(conf) == [
        '[DEFAULT] hots: unknown option in %s, ignored (did you mean '
        'host?)' % path,
        '[conductor] flavours: unknown option in %s, ignored (did you mean '
        'flavors?)' % path,
        '[flavors]: unknown section in %s, ignored' % path,
    ]


def test_the_daemon_warns_and_starts(tmp_path):
    proc = daemon_support.Daemon(tmp_path, 'tristate-compute-agent', {
        'DEFAULT': {'transport_url': daemon_support.closed_url(
            support.free_port()), 'state_dir': tmp_path / 'state'},
        'conductor': {'flavours': 'tiny:1:512:1'},
        'metrics': {'host': '127.0.0.1', 'port': 0},
    }).start()
    try:
        proc.message('READY=1', 60)
        assert ('WARNING common.service [-] Configuration: [conductor] '
                'flavours: unknown option in' in proc.output())
        code, _seconds = proc.terminate()
        assert code == 0
    finally:
        proc.close()
