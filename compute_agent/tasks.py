"""What each action of the table asks of the virt driver, on the agent.

One small function per action; the agent's manager runs them, reports
progress, and ends the task. Parameters come prepared by the conductor.

Images: a task that needs one (build, rebuild, rescue) or makes one
(snapshot, backup) carries ``params['image'] = {'url', 'grant'}``: the
image service to use and the capability for that one image. A driver that
builds disks from files (``needs_image_files``: libvirt) gets the image
fetched into the host's cache (:mod:`compute_agent.imagecache`) as
``image=``, held there until the driver returns; the fake driver needs no
file. A snapshot's driver writes the disk to a temporary file
(``target=``) that the agent uploads to ``params['image_id']`` with the
write grant, then deletes. With an existing Glance (no grant) the agent
also deletes the image of a snapshot that failed and rotates backups
(:mod:`compute_agent.existing_glance`). Drivers that do not take these
keywords are called as before (:func:`takes`).

Config drive: a build or rebuild whose ``params['config_drive']`` is true
gets the instance's ConfigDrive-2 ISO written first
(:mod:`compute_agent.configdrive`) and passed as ``config_drive=PATH``.

Ports: a build or rebuild carries ``params['ports']`` (the guest's network
cards, :mod:`compute_agent.net.ports`); the driver gets them as ``ports=``
if it takes that keyword. A rebuild without the key (an older conductor)
keeps the domain's ports. The host's DHCP entries follow (the agent's
manager refreshes them after these tasks: :data:`CHANGES_PORTS`).
"""

import contextlib
import functools
import inspect
import logging
import os

from common import states
from common.flavors import Flavor
from common.images import client as image_client
from compute_agent import coldmove
from compute_agent import configdrive
from compute_agent import existing_glance as glance
from compute_agent.virt.driver import VirtError

LOG = logging.getLogger(__name__)


def takes(method, name):
    """Whether a callable accepts the keyword ``name``. A driver's methods
    are asked at every task: the answer is kept per function (a bound
    method's, so per class), as ``inspect.signature`` costs ~50 µs."""
    func = getattr(method, '__func__', method)
    try:
        return _accepts(func, name)
    except TypeError:       # an unhashable callable
        return name in inspect.signature(method).parameters


@functools.lru_cache(maxsize=1024)
def _accepts(func, name):
    return name in inspect.signature(func).parameters


_takes = takes


@contextlib.contextmanager
def _image(agent, params, image_ref, method):
    """The driver's extra keywords for ``image_ref``: ``{'image':
    CachedImage}`` held in the cache for the block when the driver builds
    from files and the task names an image service; else none."""
    # the client last: a driver that needs no files makes none
    client = None
    if (agent.image_cache is not None and image_ref
            and getattr(agent.driver, 'needs_image_files', False)
            and takes(method, 'image')):
        client = agent.image_client(params)
    if client is None:
        yield {}
        return
    with agent.image_cache.use(image_ref, client) as cached:
        yield {'image': cached}


def _config_drive(agent, inst, params, method):
    """``{'config_drive': path}`` when the task asks for a config drive
    (written now, :mod:`compute_agent.configdrive`); a driver that cannot
    attach one fails the task rather than boot the guest without it. A
    task from a conductor before config drives says nothing: none."""
    if 'config_drive' not in params:
        return {}
    drive = configdrive.make(agent.conf, agent.host, inst, params)
    if drive is None:
        return {}
    if not takes(method, 'config_drive'):
        configdrive.remove(agent.conf, agent.host, inst['uuid'])
        raise VirtError('the %s driver cannot attach a config drive'
                        % type(agent.driver).__name__)
    return {'config_drive': drive}


def _ports(method, params):
    """``{'ports': [...]}`` when the task carries ports and the driver
    takes them; else nothing."""
    if 'ports' not in params or not takes(method, 'ports'):
        return {}
    return {'ports': list(params['ports'] or ())}


def _numa(method, inst):
    """``{'numa_cells': [...]}`` for a guest with NUMA cells
    (:mod:`common.numa`); a driver that cannot make them fails the task
    rather than build the guest without them."""
    cells = inst.get('numa_cells')
    if not cells:
        return {}
    if not takes(method, 'numa_cells'):
        raise VirtError('this host\'s driver cannot give a guest NUMA cells '
                        '(hw:numa_nodes > 1)')
    return {'numa_cells': list(cells)}


def _build(agent, inst, params):
    uuid = inst['uuid']
    # an unshelve builds from the shelve's snapshot (params['image_ref'])
    image_ref = params.get('image_ref') or inst['image_ref']
    # Networks and disks are attached within spawn (states._BUILD_STEPS).
    agent.progress(inst, step=states.step.SPAWNING)
    drive = _config_drive(agent, inst, params, agent.driver.spawn)
    try:
        with _image(agent, params, image_ref,
                    agent.driver.spawn) as extra:
            extra.update(_ports(agent.driver.spawn, params))
            extra.update(_numa(agent.driver.spawn, inst))
            agent.driver.spawn(
                uuid, name=inst['name'], image_ref=image_ref,
                flavor=Flavor(inst['flavor_name'], inst['vcpus'],
                              inst['memory_mb'], inst['disk_gb']),
                **drive, **extra)
    except BaseException:
        if drive:       # no domain to hold it: nothing would remove it
            configdrive.remove(agent.conf, agent.host, uuid)
        raise
    if params.get('power_off'):
        # an evacuated guest that is to stay stopped (issue 25); an agent
        # before this key leaves it running and reconcile powers it off
        _stop(agent, inst, params)


def _rebuild(agent, inst, params):
    if agent.driver.get_domain(inst['uuid']) is None:
        return _build(agent, inst, params)       # a buried instance
    agent.progress(inst, step=states.step.SPAWNING)
    drive = _config_drive(agent, inst, params, agent.driver.rebuild)
    with _image(agent, params, params['image_ref'],
                agent.driver.rebuild) as extra:
        extra.update(_ports(agent.driver.rebuild, params))
        return agent.driver.rebuild(inst['uuid'],
                                    image_ref=params['image_ref'], **drive,
                                    **extra)


def _stop(agent, inst, params):
    agent.driver.power_off(inst['uuid'],
                           timeout=agent.conf.compute.shutdown_timeout)


def _unrescue(agent, inst, params):
    agent.driver.unrescue(inst['uuid'])
    if inst.get('return_vm_state') == states.vm.STOPPED:
        # rescued from STOPPED: leave it as the user had it
        _stop(agent, inst, params)


def _rescue(agent, inst, params):
    kwargs = {'image_ref': params['image_ref']}
    if params.get('password') is not None and _takes(agent.driver.rescue,
                                                     'password'):
        kwargs['password'] = params['password']
        if params.get('password_required') and _takes(agent.driver.rescue,
                                                      'password_required'):
            kwargs['password_required'] = True
    with _image(agent, params, params['image_ref'],
                agent.driver.rescue) as extra:
        agent.driver.rescue(inst['uuid'], **kwargs, **extra)


def _snapshot(agent, inst, params):
    kwargs = {'image_name': params['image_name']}
    if params.get('image_id') and _takes(agent.driver.snapshot, 'image_id'):
        kwargs['image_id'] = params['image_id']
    client = agent.image_client(params)
    if (client is None or not params.get('image_id')
            or not takes(agent.driver.snapshot, 'target')):
        agent.driver.snapshot(inst['uuid'], **kwargs)
        return None
    with _deleted_on_failure(client, params), \
            coldmove.scratch(agent, params['image_id'],
                             prefix='snapshot-') as target:
        agent.driver.snapshot(inst['uuid'], target=target, **kwargs)
        _upload(client, params['image_id'], target)
    return client


def _backup(agent, inst, params):
    client = _snapshot(agent, inst, params)
    if client is not None and glance.existing(params):
        glance.rotate(client, params['image_id'], params.get('rotation'))


@contextlib.contextmanager
def _deleted_on_failure(client, params):
    """A snapshot that fails leaves no image in an existing Glance (as
    Nova, which deletes it): the agent deletes the queued image there."""
    try:
        yield
    except BaseException:
        if glance.existing(params):
            glance.forget_snapshot(client, params['image_id'])
        raise


def _upload(client, image_id, path):
    size = os.path.getsize(path)
    LOG.info('Uploading snapshot image %s (%d bytes)', image_id, size)
    try:
        with open(path, 'rb') as f:
            client.upload(image_id, f, size=size)
    except (image_client.ImageNotFound, image_client.ImageForbidden,
            image_client.ImageServiceError) as err:
        # The domain is as it was: only the image failed (the conductor
        # marks it killed).
        raise VirtError('upload of snapshot image %s failed: %s'
                        % (image_id, err)) from None


def _shelve(agent, inst, params):
    """Nova's shelve: the guest powered off and its disk uploaded as the
    snapshot ``params['image_id']``. If the snapshot fails, a guest that
    ran runs again (rolled back); one that was paused or suspended stays
    off (not rolled back)."""
    info = agent.driver.get_domain(inst['uuid'])
    before = None if info is None else info.power_state
    _stop(agent, inst, params)
    try:
        _snapshot(agent, inst, params)
    except VirtError as err:
        restored = before in (states.power.RUNNING, states.power.SHUTDOWN)
        if before == states.power.RUNNING:
            try:
                agent.driver.power_on(inst['uuid'])
            except VirtError as again:
                LOG.warning('Shelve of %s failed and its guest could not '
                            'be started again: %s', inst['uuid'], again)
                restored = False
        raise VirtError(str(err), rolled_back=restored) from None


def _shelve_offload(agent, inst, params):
    """The domain, its disk and its config drive removed from this host
    (the snapshot holds the disk)."""
    agent.driver.destroy(inst['uuid'])
    configdrive.remove(agent.conf, agent.host, inst['uuid'])


def _unshelve(agent, inst, params):
    """A shelved guest powered on; an offloaded one (no domain here:
    also a shelved one whose domain vanished) built from its snapshot,
    ``params['image_ref']``."""
    if agent.driver.get_domain(inst['uuid']) is None:
        return _build(agent, inst, params)
    agent.driver.power_on(inst['uuid'])


def _resize(agent, inst, params):
    if moves_away('resize', params, agent.host):
        return coldmove.send(agent, inst, params)
    agent.progress(inst, step=states.step.RESIZE_PREP)
    agent.progress(inst, step=states.step.RESIZE_MIGRATING)
    agent.driver.resize(inst['uuid'], flavor=Flavor(**params['flavor']))
    agent.progress(inst, step=states.step.RESIZE_FINISH)


def _live_migrate(agent, inst, params):
    """To ``params['dest']``, prepared as ``params['incoming']`` says (the
    destination's answer to agent RPC 1.6, for a driver that takes it),
    or, with ``params['prepare']`` (agent RPC 1.9), as the destination
    answers now, asked through the conductor (RPC 1.18); the job's
    progress is the task's."""
    method = agent.driver.migrate_out
    incoming = params.get('incoming')
    if params.get('prepare') and incoming is None:
        incoming = agent.prepare_destination(inst, _carried(agent, inst))
    extra = {}
    if takes(method, 'incoming'):
        extra['incoming'] = incoming
    if takes(method, 'progress'):
        extra['progress'] = lambda percent: agent.progress(inst,
                                                           percent=percent)
    method(inst['uuid'], dest=params['dest'], **extra)
    # it runs there now, on its own copy of the config drive
    configdrive.remove(agent.conf, agent.host, inst['uuid'])


def _carried(agent, inst):
    """What a live migration's source sends its destination with the
    prepare: the guest's config drive (its bytes), if it has one."""
    try:
        drive = configdrive.carried(agent.conf, agent.host, inst['uuid'])
    except (OSError, ValueError) as err:
        raise VirtError('its config drive cannot be carried: %s' % err,
                        rolled_back=True) from None
    return {'config_drive': drive} if drive is not None else {}


def prepare_incoming(agent, inst, params):
    """Agent RPC 1.6 on a live migration's destination: what the driver
    made ready for the domain (its ``prepare_incoming``), with the image
    the domain is built on fetched into this host's cache; {} for a driver
    that needs nothing (the fake)."""
    drive = None
    if params.get('config_drive'):       # the guest's, carried (RPC 1.9)
        drive = configdrive.place(agent.conf, agent.host, inst['uuid'],
                                  params['config_drive'])
    method = getattr(agent.driver, 'prepare_incoming', None)
    if method is None:
        return {}
    flavor = Flavor(inst['flavor_name'], inst['vcpus'], inst['memory_mb'],
                    inst['disk_gb'])
    with _image(agent, params, inst['image_ref'], method) as extra:
        if drive is not None:
            if not takes(method, 'config_drive'):
                configdrive.remove(agent.conf, agent.host, inst['uuid'])
                raise VirtError('the %s driver cannot attach a config drive'
                                % type(agent.driver).__name__)
            extra['config_drive'] = drive
        return method(inst['uuid'], flavor=flavor,
                      image_ref=inst['image_ref'], **extra)


def _set_security_groups(agent, inst, params):
    """Every card of the guest up (``default``) or down (no group):
    :mod:`common.secgroups`. A driver without link states cannot honour a
    port in no group: the task fails, nothing changed."""
    method = getattr(agent.driver, 'set_security_groups', None)
    if method is None:
        raise VirtError('the %s driver cannot set a guest\'s link state '
                        '(security groups)' % type(agent.driver).__name__)
    method(inst['uuid'], ports=list(params.get('ports') or ()))


def _simple(method, **fixed):
    def run(agent, inst, params):
        getattr(agent.driver, method)(inst['uuid'], **fixed)
    run.__name__ = '_%s' % method
    return run


def _cross_host(cold, method):
    """The end of a cold move (``params['cross_host']``,
    :mod:`compute_agent.coldmove`), or of a resize in place."""
    in_place = _simple(method)

    def run(agent, inst, params):
        return (cold if params.get('cross_host') else in_place)(
            agent, inst, params)
    run.__name__ = '_%s' % method
    return run


moves_away = coldmove.moves_away


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
    'migrate': coldmove.send,
    'confirm_resize': _cross_host(coldmove.confirm, 'confirm_resize'),
    'revert_resize': _cross_host(coldmove.revert, 'revert_resize'),
    'live_migrate': _live_migrate,
    'snapshot': _snapshot,
    'backup': _backup,
    'shelve': _shelve,
    'shelve_offload': _shelve_offload,
    'unshelve': _unshelve,
    'set_password': lambda agent, inst, params: agent.driver.set_password(
        inst['uuid'], password=params['password']),
    'set_security_groups': _set_security_groups,
}

def result_values(action, params):
    """What a finished task tells the conductor besides power: the image a
    rebuild used, a shelve's snapshot, the security groups set."""
    if action == 'rebuild' and params.get('image_ref'):
        return {'image_ref': params['image_ref']}
    if action == 'shelve' and params.get('image_id'):
        return {'shelved_image_id': params['image_id']}
    if action == 'set_security_groups':
        # the groups the cards' links now follow (the conductor stores them)
        return {'security_groups': list(params.get('security_groups') or ())}
    return {}


# Tasks whose handler reports a progress step before it changes anything
# (the conductor's answer to it says whether the task still holds the
# instance): the agent sends no separate first progress for them.
STEP_FIRST = frozenset({'build', 'rebuild', 'resize', 'migrate'})

# Tasks after which the domain is no longer on this host.
LEAVES_HOST = frozenset({'live_migrate'})

# Tasks after which the host's DHCP entries for the instance are read again
# from the domain (made, replaced, or gone from this host).
CHANGES_PORTS = frozenset({'build', 'rebuild', 'live_migrate',
                           'shelve_offload', 'unshelve'})
