"""What each action of the table asks of the virt driver, on the agent.

One small function per action; the agent's manager runs them, reports
progress, and ends the task. Parameters come prepared by the conductor.
"""

import inspect

from common import states
from common.flavors import Flavor


def _build(agent, inst, params):
    uuid = inst['uuid']
    # Networks and disks are attached within spawn (states._BUILD_STEPS).
    agent.progress(inst, step=states.step.SPAWNING)
    agent.driver.spawn(uuid, name=inst['name'],
                       flavor=Flavor(inst['flavor_name'], inst['vcpus'],
                                     inst['memory_mb'], inst['disk_gb']),
                       image_ref=inst['image_ref'])


def _rebuild(agent, inst, params):
    if agent.driver.get_domain(inst['uuid']) is None:
        return _build(agent, inst, params)       # a buried instance
    agent.progress(inst, step=states.step.SPAWNING)
    return agent.driver.rebuild(inst['uuid'], image_ref=params['image_ref'])


def _stop(agent, inst, params):
    agent.driver.power_off(inst['uuid'],
                           timeout=agent.conf.compute.shutdown_timeout)


def _unrescue(agent, inst, params):
    agent.driver.unrescue(inst['uuid'])
    if inst.get('return_vm_state') == states.vm.STOPPED:
        # rescued from STOPPED: leave it as the user had it
        _stop(agent, inst, params)


def _takes(method, name):
    """Whether a driver method accepts the keyword ``name``."""
    return name in inspect.signature(method).parameters


def _rescue(agent, inst, params):
    kwargs = {'image_ref': params['image_ref']}
    if params.get('password') is not None and _takes(agent.driver.rescue,
                                                     'password'):
        kwargs['password'] = params['password']
    agent.driver.rescue(inst['uuid'], **kwargs)


def _snapshot(agent, inst, params):
    kwargs = {'image_name': params['image_name']}
    if params.get('image_id') and _takes(agent.driver.snapshot, 'image_id'):
        kwargs['image_id'] = params['image_id']
    agent.driver.snapshot(inst['uuid'], **kwargs)


def _resize(agent, inst, params):
    agent.progress(inst, step=states.step.RESIZE_PREP)
    agent.progress(inst, step=states.step.RESIZE_MIGRATING)
    agent.driver.resize(inst['uuid'], flavor=Flavor(**params['flavor']))
    agent.progress(inst, step=states.step.RESIZE_FINISH)


def _simple(method, **fixed):
    def run(agent, inst, params):
        getattr(agent.driver, method)(inst['uuid'], **fixed)
    run.__name__ = '_%s' % method
    return run


HANDLERS = {
    'build': _build,
    'rebuild': _rebuild,
    'stop': _stop,
    'soft_delete': _stop,
    'start': _simple('power_on'),
    'power_on': _simple('power_on'),
    'power_off': _stop,
    'restore': _simple('power_on'),
    'reboot': _simple('reboot', hard=False),
    'reboot_hard': _simple('reboot', hard=True),
    'pause': _simple('pause'),
    'unpause': _simple('unpause'),
    'suspend': _simple('suspend'),
    'resume': _simple('resume'),
    'rescue': _rescue,
    'unrescue': _unrescue,
    'resize': _resize,
    'confirm_resize': _simple('confirm_resize'),
    'revert_resize': _simple('revert_resize'),
    'live_migrate': lambda agent, inst, params: agent.driver.migrate_out(
        inst['uuid'], dest=params['dest']),
    'snapshot': _snapshot,
    'backup': _snapshot,
    'set_password': lambda agent, inst, params: agent.driver.set_password(
        inst['uuid'], password=params['password']),
}

def result_values(action, params):
    """What a finished task tells the conductor besides power: the image a
    rebuild used."""
    if action == 'rebuild' and params.get('image_ref'):
        return {'image_ref': params['image_ref']}
    return {}


# Tasks whose handler reports a progress step before it changes anything
# (the conductor's answer to it says whether the task still holds the
# instance): the agent sends no separate first progress for them.
STEP_FIRST = frozenset({'build', 'rebuild', 'resize'})

# Tasks after which the domain is no longer on this host.
LEAVES_HOST = frozenset({'live_migrate'})
