"""One grep follows a task: with Tristate's log format, the API's access
line of the request that started a task, the conductor's lines and the
agent's lines for it all carry ``[task: <task_id>]``, and the instance."""

import logging

from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log as oslo_log
import pytest

from common import context as tcontext
from common.states import vm
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.conftest import wait_idle
from tests.images_support import IMAGE


class Lines(logging.Handler):
    """Keeps every record formatted as a daemon's log file would be."""

    def __init__(self, conf):
        super().__init__(logging.INFO)
        self.lines = []
        self.setFormatter(formatters.ContextFormatter(project='tristate',
                                                      config=conf))

    def emit(self, record):
        self.lines.append((record.name, self.format(record)))


@pytest.fixture
def lines(plane):
    conf = cfg.ConfigOpts()          # oslo.log's options, as a daemon has
    oslo_log.register_options(conf)
    conf([])
    conf.set_override('logging_context_format_string',
                      tcontext.LOG_CONTEXT_FORMAT)
    handler = Lines(conf)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler.lines
    root.removeHandler(handler)
    root.setLevel(old_level)


def test_one_task_id_in_api_conductor_and_agent_lines(plane, lines):
    api = Api(api_support.make_app(plane), token='alice:demo')
    created = api.post('/servers', json={'server': {
        'name': 'traced', 'flavorRef': 'tiny', 'imageRef': IMAGE}})
    assert created.status_code == 202
    uuid = created.get_json()['server']['id']
    build_task = created.headers['Tristate-Task-Id']
    assert wait_idle(plane, uuid)['vm_state'] == vm.ACTIVE
    stop = api.post('/servers/%s/action' % uuid, json={'os-stop': None})
    stop_task = stop.headers['Tristate-Task-Id']
    assert wait_idle(plane, uuid)['vm_state'] == vm.STOPPED

    for task_id, method in ((build_task, 'POST /v2.1/servers '),
                            (stop_task, 'POST /v2.1/servers/%s/action'
                             % uuid)):
        tagged = [(name, line) for name, line in lines
                  if '[task: %s]' % task_id in line]
        kinds = {name.split('.')[0] for name, _line in tagged}
        assert {'api', 'conductor', 'compute_agent'} <= kinds, tagged
        access = [line for name, line in tagged if name == 'api.wsgi']
        assert len(access) == 1 and method in access[0], access
        assert 'alice/demo' in access[0] or 'alice demo' in access[0]
        # the conductor's and agent's lines name the instance too
        assert all('[instance: %s]' % uuid in line for name, line in tagged
                   if name.split('.')[0] in ('conductor', 'compute_agent')
                   and 'Running' in line), tagged
