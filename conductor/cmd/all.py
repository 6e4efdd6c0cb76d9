"""``tristate-all``: the whole control plane in one process, nothing to install.

    tristate-all [--hosts N] [--state-dir DIR] [--config-file F] [--demo]
                 [--api-port PORT]

One conductor and N compute agents (``host1``..``hostN``) on the fake
hypervisor, SQLite under ``--state-dir`` (default ~/.tristate) and an
in-process bus (``inproc://``, :mod:`common.inproc`). ``tristate-fakevirt --state-dir
DIR ...`` acts on the same fake hosts from another shell. With ``--demo`` it
uploads an image through the image API, walks a few instances built from it
through the action table, prints what happened and exits; without, it
serves the REST API on 127.0.0.1:PORT (default 8774; the image API under
``/image``, the reservation API under ``/reservation``) and runs until
Ctrl-C. Its authentication is noauth, admin by default
(``tristate server list`` works from another shell), unless a config file
sets ``[api] auth_strategy`` (``keystone``: every token is checked by
keystonemiddleware, as in ``tristate-api``).
"""

import logging
import sys
import time

from oslo_config import cfg

from common import context as tcontext
from common import exception
from common import service
from common import states
from conductor import embedded

LOG = logging.getLogger(__name__)

CLI_OPTS = [
    cfg.IntOpt('hosts', default=2, min=1, max=1000,
               help='Number of fake hypervisor hosts (agents) to run.'),
    cfg.StrOpt('state-dir', dest='cli_state_dir', metavar='DIR',
               help='Directory for the SQLite database and the fake hosts '
                    '(default: [DEFAULT] state_dir, ~/.tristate).'),
    cfg.StrOpt('driver', dest='cli_driver', choices=['fake', 'libvirt'],
               help='Virt driver of the agents (default: [compute] driver, '
                    'fake).'),
    cfg.StrOpt('libvirt-uri', dest='cli_libvirt_uri', metavar='URI',
               help='libvirt connection URI with --driver libvirt, e.g. '
                    'test:///default (each host gets its own node file).'),
    cfg.BoolOpt('demo', default=False,
                help='Run a short demonstration, print it, and exit.'),
    cfg.PortOpt('api-port', dest='cli_api_port', default=8774,
                help='Port of the REST API on 127.0.0.1 (0: a free one).'),
]


def _wait_idle(client, ctx, uuid, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        inst = client.statedb.get_instance(uuid)
        if inst['task_id'] is None or time.monotonic() > deadline:
            return inst
        time.sleep(0.01)


def _show(inst, what):
    print('  %-28s %-6s %-14s task=%-12s power=%-9s host=%s' % (
        what, inst['name'], inst['vm_state'], inst['task_state'] or '-',
        states.power_state_name(inst['power_state']), inst['host'] or '-'))


def _act(client, ctx, inst, action, **params):
    started = time.monotonic()
    client.run_action(ctx, inst['uuid'], action, params)
    after = _wait_idle(client, ctx, inst['uuid'])
    _show(after, '%s (%.0f ms)' % (action, (time.monotonic() - started) * 1e3))
    return after


def _upload_demo_image(api_url):
    """An image made through the image API (Glance v2), as a client makes
    one: created queued, its data streamed, active once hashed."""
    from common.images import client as image_client
    glance = image_client.GlanceClient(api_url + '/image')
    print('Uploading an image through the image API (%s/image):' % api_url)
    started = time.monotonic()
    image = glance.create(name='demo-disk', disk_format='raw',
                          container_format='bare', visibility='public')
    data = DEMO_IMAGE_DATA.ljust(DEMO_IMAGE_SIZE, b'\0')
    glance.upload(image['id'], iter([data]), size=len(data))
    image = glance.show(image['id'])
    print('  %s %s %s, %d bytes, sha512 %s... (%.0f ms)' % (
        image['id'], image['name'], image['status'], image['size'],
        image['os_hash_value'][:16], (time.monotonic() - started) * 1e3))
    return image['id']


def run_demo(plane, api_url):
    client = plane.client
    ctx = tcontext.RequestContext(user_id='demo', project_id='demo')
    _wait_for_hosts(plane)
    image_id = _upload_demo_image(api_url)
    print('Building three instances from it on %d hosts (%s driver):' % (
        len(plane.host_names), plane.conf.compute.driver))
    insts = []
    for name, flavor in (('web1', 'small'), ('web2', 'small'), ('db1', 'medium')):
        started = time.monotonic()
        inst = client.create_instance(ctx, name=name, flavor=flavor,
                                      image_ref=image_id)
        inst = _wait_idle(client, ctx, inst['uuid'])
        _show(inst, 'build (%.0f ms)' % ((time.monotonic() - started) * 1e3))
        insts.append(inst)
    web1, web2, db1 = insts
    print('Walking web1 through the action table:')
    for action, params in (('stop', {}), ('start', {}), ('pause', {}),
                           ('unpause', {}), ('resize', {'flavor': 'medium'}),
                           ('confirm_resize', {}), ('rescue', {}),
                           ('unrescue', {})):
        web1 = _act(client, ctx, web1, action, **params)
    print('The table refuses what it does not allow:')
    try:
        client.run_action(ctx, web1['uuid'], 'unpause')
    except exception.TristateError as err:
        print('  refused: %s' % err)
    if plane.conf.compute.driver == 'fake':
        _guest_shutdown(plane, web2)
    print('Hard delete works even with the host\'s agent stopped:')
    plane.stop_agent(db1['host'])
    deleted = client.delete_instance(ctx, db1['uuid'])
    _show(deleted, 'delete (agent down)')
    plane.start_agent(db1['host'])
    gone = _wait_domain_gone(plane, db1['host'], db1['uuid'])
    print('  agent of %s back: leftover domain of db1 %s' % (
        db1['host'], 'destroyed' if gone else 'still there (see the log)'))
    print('Action log of web1:')
    for entry in plane.statedb.list_actions(web1['uuid']):
        print('  %-16s %-9s %s -> %s  task %s' % (
            entry['action'], entry['result'], entry['vm_state_before'],
            entry['vm_state_after'], entry['task_id']))
    print('Hosts:')
    for host in plane.statedb.list_hosts():
        print('  %-8s used %d/%d vCPUs, %d/%d MiB' % (
            host['name'], host['used_vcpus'], host['vcpus'],
            host['used_memory_mb'], host['memory_mb']))
    return 0


def _guest_shutdown(plane, inst, timeout=10.0):
    """Power the guest off behind the control plane's back, as
    ``tristate-fakevirt guest-shutdown`` does, and wait for reconcile."""
    from compute_agent.virt import fake
    print('The guest of web2 powers itself off (nobody asks Tristate):')
    started = time.monotonic()
    fake.HostStore(plane.conf.state_dir, inst['host']).set_power(
        inst['uuid'], states.power.SHUTDOWN, states.REASON_GUEST,
        by='demo')
    deadline = started + timeout
    while time.monotonic() < deadline:
        now = plane.statedb.get_instance(inst['uuid'])
        if now['vm_state'] == states.vm.STOPPED:
            break
        time.sleep(0.01)
    _show(now, 'reconciled (%.0f ms)' % ((time.monotonic() - started) * 1e3))
    why = plane.statedb.list_actions(inst['uuid'])[-1]
    print('  action log: %s %s -> %s: %s' % (
        why['action'], why['vm_state_before'], why['vm_state_after'],
        why['message']))


def _wait_domain_gone(plane, host, uuid, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if plane.agents[host].driver.get_domain(uuid) is None:
            return True
        time.sleep(0.02)
    return False


def _wait_for_hosts(plane, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(plane.statedb.list_hosts()) >= len(plane.host_names):
            return
        time.sleep(0.02)


# The demo's image: a small raw disk (the fake driver boots nothing).
DEMO_IMAGE_DATA = b'tristate demo disk\n'
DEMO_IMAGE_SIZE = 1024 * 1024


def _choose_driver(conf):
    if conf.cli_driver:
        conf.set_override('driver', conf.cli_driver, group='compute')
    if conf.cli_libvirt_uri:
        conf.set_override('connection_uri', conf.cli_libvirt_uri,
                          group='libvirt')


def main(argv=None):
    conf = service.prepare(argv, cli_opts=CLI_OPTS,
                           description='The whole Tristate control plane in '
                                       'one process, on a fake hypervisor.',
                           requires=('database',))
    if conf.cli_state_dir:
        conf.set_override('state_dir', conf.cli_state_dir)
    if conf.transport_url in (None, 'rabbit://'):     # the library's default
        conf.set_override('transport_url', embedded.MEMORY_URL)
    _choose_driver(conf)
    service.check_requires(conf, ('libvirt',))      # after --driver
    plane = embedded.Embedded(conf, hosts=conf.hosts).start()
    api_server = None
    try:
        from api import service as api_service
        api_server = api_service.serve_embedded(
            conf, plane, port=0 if conf.demo else conf.cli_api_port)
        if conf.demo:
            return run_demo(plane, api_server.url)
        print('Tristate API: %s/v2.1 (images: %s/image, leases: '
              '%s/reservation/v1)' % ((api_server.url,) * 3))
        print('Tristate is running: %d hosts, state in %s. Ctrl-C stops it.'
              % (conf.hosts, conf.state_dir))
        sys.stdout.flush()
        service.wait_for_signal()
        return 0
    finally:
        if api_server is not None:
            api_server.stop()
        plane.stop()
