"""Fixtures of the unit tests: a private configuration whose state_dir is
the test's own directory, and a Glance stand-in over real HTTP."""

import pytest
from oslo_config import cfg

from common import conf as tconf
from tests.unit.glance_stub import GlanceStub


@pytest.fixture
def conf(tmp_path):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate', default_config_files=[])
    conf.set_override('state_dir', str(tmp_path))
    yield conf
    conf.reset()


@pytest.fixture
def glance():
    stub = GlanceStub()
    yield stub
    stub.stop()
