"""The JSON bodies: Nova's fields plus tristate's, PENDING hidden as ERROR."""

import datetime

from api import microversion
from api import views
from common.states import power
from common.states import vm

LINKS = views.Links('http://api:8774/')
OLD = microversion.APIVersion(2, 1)
NEW = microversion.MAX


def _inst(**values):
    inst = {'uuid': 'u1', 'name': 'web1', 'project_id': 'p1',
            'user_id': 'alice', 'host': 'host1', 'flavor_name': 'small',
            'vcpus': 1, 'memory_mb': 2048, 'disk_gb': 20,
            'image_ref': 'cirros', 'vm_state': vm.ACTIVE, 'task_state': None,
            'task_id': None, 'progress_step': None, 'progress_percent': 0,
            'power_state': power.RUNNING, 'power_reason': None,
            'user_shutdown_policy': 'stop', 'crash_policy': 'restart',
            'created_at': '2026-01-01T12:00:00.000000',
            'updated_at': datetime.datetime(2026, 1, 1, 12, 5),
            'launched_at': None, 'hard_deleted_at': None}
    inst.update(values)
    return inst


def test_server_body():
    body = views.server(_inst(metadata={'color': 'red'}), version=OLD,
                        links=LINKS)
    assert body['links'][0]['href'] == 'http://api:8774/v2.1/servers/u1'
    assert body['links'][1]['href'] == 'http://api:8774/servers/u1'
    assert body['status'] == 'ACTIVE'
    assert body['created'] == '2026-01-01T12:00:00Z'
    assert body['updated'] == '2026-01-01T12:05:00Z'
    assert body['OS-EXT-STS:power_state'] == power.RUNNING
    assert body['OS-EXT-SRV-ATTR:host'] == 'host1'
    assert body['flavor'] == {'id': 'small', 'links': [
        {'rel': 'bookmark', 'href': 'http://api:8774/flavors/small'}]}
    # user metadata; the policy keys are Tristate's own, from 2.101
    assert body['metadata'] == {'color': 'red'}
    # Nova's 2.1: no key of a later microversion, none of Tristate's
    assert not {'host_status', 'locked', 'description', 'tags'} & set(body)
    assert not [k for k in body if k.startswith('tristate:')]
    new = views.server(_inst(metadata={'color': 'red'}), version=NEW,
                       links=LINKS)
    assert new['flavor']['original_name'] == 'small'
    assert new['tristate:power_state_name'] == 'RUNNING'
    assert new['tristate:oper_state'] == 'running'
    assert new['tristate:ec2_state'] == 'running'
    assert new['host_status'] == 'UP'
    assert new['metadata'] == {'color': 'red', 'tristate:user_shutdown': 'stop',
                               'tristate:crash': 'restart'}


def test_a_running_task_shows_its_id_and_progress():
    body = views.server(_inst(vm_state=vm.INITIALIZED, task_state='building',
                              task_id='t1', progress_step='spawning',
                              progress_percent=40, power_state=power.NOSTATE),
                        version=NEW, links=LINKS)
    assert body['status'] == 'BUILD'
    assert body['tristate:task_id'] == 't1'
    assert body['tristate:progress'] == {'step': 'spawning', 'percent': 40}
    assert body['progress'] == 40
    assert body['tristate:ec2_state'] == 'pending'


def test_pending_is_shown_from_its_microversion_only():
    inst = _inst(vm_state=vm.PENDING, host=None, power_state=power.NOSTATE)
    old = views.server(inst, version=OLD, links=LINKS)
    new = views.server(inst, version=NEW, links=LINKS)
    assert (old['status'], old['OS-EXT-STS:vm_state']) == ('ERROR', 'error')
    assert (new['status'], new['OS-EXT-STS:vm_state']) == ('PENDING',
                                                           'pending')
    entry = {'action': 'build', 'instance_uuid': 'u1', 'task_id': 't',
             'started_at': '2026-01-01T12:00:00', 'result': 'buried',
             'vm_state_before': vm.INITIALIZED, 'vm_state_after': vm.PENDING}
    below = microversion.APIVersion(2, 100)
    assert views.instance_action(entry, below).get(
        'tristate:vm_state_after') is None
    assert views.instance_action(entry, NEW)['tristate:vm_state_after'] == (
        vm.PENDING)


def test_a_host_that_is_down():
    body = views.server(_inst(), version=NEW, links=LINKS, host_up=False)
    assert body['tristate:oper_state'] == 'ERROR_nodedown'
    assert body['host_status'] == 'DOWN'


def test_hypervisor_counts_oper_states():
    host = {'name': 'host1', 'up': True, 'enabled': True, 'vcpus': 16,
            'used_vcpus': 2, 'memory_mb': 4096, 'used_memory_mb': 1024,
            'disk_gb': 100, 'used_disk_gb': 10, 'disabled_reason': None,
            'last_heartbeat': '2026-01-01T12:00:00'}
    insts = [_inst(), _inst(uuid='u2', vm_state=vm.STOPPED,
                            power_state=power.SHUTDOWN),
             _inst(uuid='u3', host='host2')]
    body = views.hypervisor(host, insts, version=NEW)
    assert body['running_vms'] == 2
    assert body['tristate:oper_states']['running'] == 1
    assert body['tristate:oper_states']['ADMIN_down'] == 1
    before = views.hypervisor(host, insts,
                              version=microversion.APIVersion(2, 87))
    assert (before['vcpus_used'], before['free_ram_mb']) == (2, 3072)
    assert before['running_vms'] == 2
    assert not [k for k in before if k.startswith('tristate:')]
    assert views.hypervisor(host, insts, detail=False) == {
        'id': 'host1', 'hypervisor_hostname': 'host1', 'state': 'up',
        'status': 'enabled'}


def test_hypervisor_shows_reserved_resources_as_nova():
    """The host row holds what instances may use; Nova shows the totals
    with the reserved memory and disk counted as used (issue 25)."""
    host = {'name': 'host1', 'up': True, 'vcpus': 14, 'used_vcpus': 2,
            'memory_mb': 3584, 'used_memory_mb': 1024, 'disk_gb': 99,
            'used_disk_gb': 10, 'reserved_vcpus': 2,
            'reserved_memory_mb': 512, 'reserved_disk_gb': 1}
    body = views.hypervisor(host, [], version=microversion.APIVersion(2, 1))
    assert {k: body[k] for k in (
        'vcpus', 'vcpus_used', 'memory_mb', 'memory_mb_used', 'free_ram_mb',
        'local_gb', 'local_gb_used', 'free_disk_gb')} == {
        'vcpus': 16, 'vcpus_used': 2, 'memory_mb': 4096,
        'memory_mb_used': 1536, 'free_ram_mb': 2560, 'local_gb': 100,
        'local_gb_used': 11, 'free_disk_gb': 89}


def test_quota_set_keys_per_microversion():
    limits = {'instances': 10, 'cores': 20, 'ram': 1024, 'disk': 5,
              'lease_hosts': -1, 'lease_hours': -1}
    at = {v: views.quota_set(limits, microversion.APIVersion(2, v))
          for v in (1, 36, 57)}
    assert 'floating_ips' in at[1] and 'floating_ips' not in at[36]
    assert 'injected_files' in at[36] and 'injected_files' not in at[57]
    assert not {'disk', 'lease_hosts'} & set(at[57])
    assert views.quota_set(limits, NEW)['disk'] == 5


def test_flavor_per_microversion():
    flv = {'id': 'f1', 'name': 'small', 'vcpus': 1, 'memory_mb': 512,
           'disk_gb': 1, 'description': 'd', 'extra_specs': {'a': 'b'}}
    v = microversion.APIVersion
    old = views.flavor(flv, LINKS, version=v(2, 1))
    assert 'description' not in old and 'extra_specs' not in old
    assert old['swap'] == ''
    assert views.flavor(flv, LINKS, detail=False, version=v(2, 55))[
        'description'] == 'd'
    new = views.flavor(flv, LINKS, version=v(2, 75))
    assert (new['extra_specs'], new['swap']) == ({'a': 'b'}, 0)
