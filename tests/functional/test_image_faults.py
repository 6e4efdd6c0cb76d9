"""A build whose image cannot be used is the user's mistake: the server's
fault says 400, not 500 (conductor RPC 1.7 ``task_failed(fault_code)``).

The plane: one agent on the libvirt driver (libvirt's ``test:///`` driver,
real ``qemu-img``) whose image cache fetches through Tristate's own image
API, served over HTTP, with the grants the conductor issues. The conductor
is asked directly (the API would refuse an unknown image at once): the
agent's fetch finds no such image.
"""

import uuid as uuidlib

import pytest

from api import service as api_service
from common import context
from common.states import vm
from tests import images_support
from tests.functional import api_support
from tests.functional import conftest as functional

libvirt = pytest.importorskip('libvirt')

from compute_agent.virt.libvirt import LibvirtDriver  # noqa: E402
from conductor import embedded  # noqa: E402

HOST = 'lv1'
NODE = """<node>
  <cpu><nodes>1</nodes><sockets>1</sockets><cores>4</cores>
       <threads>1</threads><active>4</active><mhz>2000</mhz>
       <model>x86_64</model></cpu>
  <memory>8388608</memory>
</node>"""


@pytest.fixture
def plane(tmp_path):
    conf = api_support.configure(functional.new_conf(tmp_path))
    functional.set_opts(conf, 'compute', heartbeat_interval=0.1)
    node = tmp_path / 'node.xml'
    node.write_text(NODE)
    plane = embedded.Embedded(conf, hosts=0, url=embedded.MEMORY_URL,
                              periodic_jobs=False).start()
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    functional.set_opts(conf, 'image', service_url=server.url + '/image')
    images_support.register_all(conf, plane.statedb)
    drv = LibvirtDriver(uri='test://%s' % node, virt_type='qemu',
                        instances_path=str(tmp_path / 'instances'),
                        event_debounce=0.05, shutdown_timeout=2)
    drv.init_host(HOST)
    plane.start_agent(HOST, driver=drv)
    functional.wait_for(lambda: any(h['name'] == HOST and h['last_heartbeat']
                                    for h in plane.statedb.list_hosts()),
                        what='the first heartbeat of %s' % HOST)
    yield plane
    server.stop()
    plane.stop()
    conf.reset()


def _build(plane, image_ref):
    ctx = context.RequestContext(user_id='u', project_id='p')
    inst = plane.client.create_instance(ctx, name='vm', flavor='tiny',
                                        image_ref=image_ref)

    def ended():
        now = plane.statedb.get_instance(inst['uuid'])
        return now if now['task_id'] is None else None
    return functional.wait_for(ended, what='the build to end')


def test_a_missing_image_fails_the_build_as_a_400(plane):
    missing = str(uuidlib.uuid4())
    inst = _build(plane, missing)
    assert inst['vm_state'] == vm.ERROR
    (entry,) = [e for e in plane.statedb.list_actions(inst['uuid'])
                if e['action'] == 'build']
    assert entry['fault_code'] == 400, entry
    assert missing in entry['message']
    api = api_support.Api(api_support.make_app(plane))
    fault = api.server(inst['uuid'])['fault']
    assert fault['code'] == 400, fault


def test_the_image_it_names_builds(plane):
    inst = _build(plane, images_support.IMAGE)
    assert inst['vm_state'] == vm.ACTIVE, inst
    (entry,) = [e for e in plane.statedb.list_actions(inst['uuid'])
                if e['action'] == 'build']
    assert entry['fault_code'] is None
