"""Cold migration and cross-host resize on the agents (issue 25).

The design, and why the disk goes through the image service's store, is in
:mod:`conductor.migrate`. Here:

* :func:`send` runs on the source as the ``migrate`` or ``resize`` task
  when ``params['dest']`` names another host: power the guest off, have
  the driver write its disk to a scratch file (``export_disk``), take the
  file's SHA-256 and size, upload it to the temporary image (write grant),
  then ask the conductor to have the destination receive it (conductor RPC
  1.16). Any failure powers the guest on again if it ran and fails the
  task rolled back: the source's domain and disk were never changed.
* :func:`receive` runs on the destination (agent RPC 1.8): fetch the image
  into a scratch file while hashing it, refuse it unless its SHA-256 and
  size are the ones the source computed (so a copy corrupted anywhere
  between the two disks fails the move, the source untouched), then have
  the driver build the domain on it (``migrate_in``), started if the guest
  ran.
* :func:`confirm` and :func:`revert` are the ``cross_host`` forms of
  confirm_resize (on the destination: nothing to change there; the
  conductor has the source destroy its copy) and revert_resize (on the
  source, once the conductor placed the instance there again and told the
  destination to destroy its copy: power the kept guest on if it ran).
"""

import base64
import contextlib
import hashlib
import inspect
import logging
import os
import tempfile

from common import states
from common.flavors import Flavor
from common.images import client as image_client
from compute_agent import configdrive
from compute_agent.virt.driver import VirtError

LOG = logging.getLogger(__name__)
# The end of a console log a cold move carries (bytes; a log is bounded by
# its driver's rotation anyway).
LOG_CARRY_MAX = 1024 * 1024


def moves_away(action, params, host):
    """Whether the task ``action`` with ``params`` moves the guest from
    ``host`` to another (its result then carries no power of this host)."""
    return (action in ('migrate', 'resize') and bool(params.get('dest'))
            and params['dest'] != host)


# --- the source ---------------------------------------------------------------

def send(agent, inst, params):
    uuid = inst['uuid']
    agent.progress(inst, step=states.step.RESIZE_PREP)
    info = agent.driver.get_domain(uuid)
    ran = info is not None and info.power_state == states.power.RUNNING
    agent.driver.power_off(uuid, timeout=agent.conf.compute.shutdown_timeout)
    try:
        agent.progress(inst, step=states.step.RESIZE_MIGRATING)
        disk = _upload_disk(agent, inst, params)
        disk['start'] = ran
        drive = _config_drive(agent, uuid)
        if drive is not None:
            disk['config_drive'] = drive
        log = _console_log(agent, uuid)
        if log is not None:
            disk['console_log'] = log
        agent.disk_sent(inst, disk)
    except VirtError as err:
        if ran:
            _power_on_again(agent, uuid)
        raise VirtError('cold migration of %s to %s failed: %s'
                        % (uuid, params['dest'], err)) from None
    agent.progress(inst, step=states.step.RESIZE_FINISH)


def _config_drive(agent, uuid):
    """The guest's config drive as it goes with the disk (base64), or
    None when it has none."""
    try:
        return configdrive.carried(agent.conf, agent.host, uuid)
    except (OSError, ValueError) as err:
        raise VirtError('its config drive cannot be carried: %s'
                        % err) from None


def _console_log(agent, uuid):
    """The end of the guest's console log (at most :data:`LOG_CARRY_MAX`
    bytes, base64) as it goes with the disk, or None: the destination
    starts its log with it, so ``console log`` after the move still shows
    the guest's past. Best effort: a log that cannot be read stays."""
    read = getattr(agent.driver, 'get_console_output', None)
    if read is None:
        return None
    try:
        data = read(uuid, max_bytes=LOG_CARRY_MAX)
    except (OSError, VirtError) as err:
        LOG.warning('The console log of %s stays on host %s: %s', uuid,
                    agent.host, err)
        return None
    return base64.b64encode(data).decode('ascii') if data else None


def _power_on_again(agent, uuid):
    try:
        agent.driver.power_on(uuid)
    except VirtError:
        LOG.exception('Domain %s not powered on again after its failed cold '
                      'migration', uuid)


def _upload_disk(agent, inst, params):
    client = agent.image_client(params)
    if client is None:
        raise VirtError('no image service to carry the disk')
    image_id = params['image_id']
    with scratch(agent, image_id) as path:
        agent.driver.export_disk(inst['uuid'], target=path)
        sha256, size = sha256_of(path)
        LOG.info('Sending the disk of %s (%d bytes, sha256 %s) through '
                 'image %s', inst['uuid'], size, sha256, image_id)
        try:
            with open(path, 'rb') as f:
                client.upload(image_id, f, size=size)
        except (image_client.ImageNotFound, image_client.ImageForbidden,
                image_client.ImageServiceError) as err:
            raise VirtError('upload of the disk failed: %s' % err) from None
    return {'image_id': image_id, 'sha256': sha256, 'size': size}


# --- the destination -----------------------------------------------------------

def receive(agent, inst, params):
    """Agent RPC 1.8; {} once the domain is built (running if asked)."""
    client = agent.image_client(params)
    if client is None:
        raise VirtError('no image service to fetch the disk from')
    extra = {}
    if params.get('console_log') and 'console_log' in inspect.signature(
            agent.driver.migrate_in).parameters:
        extra['console_log'] = base64.b64decode(
            params['console_log'].encode('ascii'), validate=True)
    if params.get('config_drive'):
        if 'config_drive' not in inspect.signature(
                agent.driver.migrate_in).parameters:
            raise VirtError('the %s driver cannot attach a config drive'
                            % type(agent.driver).__name__)
        extra['config_drive'] = configdrive.place(
            agent.conf, agent.host, inst['uuid'], params['config_drive'])
    try:
        with scratch(agent, params['image_id']) as path:
            fetch(client, params['image_id'], path, sha256=params['sha256'],
                  size=params['size'])
            agent.driver.migrate_in(
                inst['uuid'], name=inst['name'],
                flavor=Flavor(**params['flavor']),
                image_ref=inst['image_ref'], disk=path,
                ports=list(params.get('ports') or ()), start=params['start'],
                **extra)
    except BaseException:
        if 'config_drive' in extra:
            configdrive.remove(agent.conf, agent.host, inst['uuid'])
        raise
    return {}


def fetch(client, image_id, path, *, sha256, size):
    """Download image ``image_id`` to ``path``; VirtError unless its
    SHA-256 and size are ``sha256`` and ``size`` (the file then removed)."""
    digest, got = hashlib.sha256(), 0
    try:
        chunks, _headers = client.download(image_id)
        with open(path, 'wb') as f:
            for chunk in chunks:
                digest.update(chunk)
                got += len(chunk)
                f.write(chunk)
    except (image_client.ImageNotFound, image_client.ImageForbidden,
            image_client.ImageServiceError) as err:
        raise VirtError('fetch of the disk failed: %s' % err) from None
    if got != size or digest.hexdigest() != sha256:
        unlink(path)
        raise VirtError('the disk received is corrupt: %d bytes with sha256 '
                        '%s, the source sent %d bytes with sha256 %s'
                        % (got, digest.hexdigest(), size, sha256))


# --- confirm and revert -----------------------------------------------------------

def confirm(agent, inst, params):
    """On the destination: its domain is already the instance's."""


def revert(agent, inst, params):
    """On the source, its kept domain as the move left it (off): on again
    if the guest ran; its disk was never written."""
    if inst.get('return_vm_state') != states.vm.STOPPED:
        agent.driver.power_on(inst['uuid'])


# --- files ---------------------------------------------------------------------------

@contextlib.contextmanager
def scratch(agent, name, prefix='coldmove-'):
    """A scratch file for a disk in transit (a cold migration's, a
    snapshot's before its upload), removed after: in the image cache's
    directory when there is one (counted with the cache's bytes; a crash's
    leftover is removed when the agent starts), else a temporary file."""
    if agent.image_cache is not None:
        with agent.image_cache.scratch_file(name) as path:
            yield path
        return
    fd, path = tempfile.mkstemp(prefix=prefix)
    os.close(fd)
    try:
        yield path
    finally:
        unlink(path)


def sha256_of(path, chunk=1 << 20):
    """The SHA-256 hex digest and size of the file at ``path``."""
    digest, size = hashlib.sha256(), 0
    with open(path, 'rb') as f:
        while True:
            data = f.read(chunk)
            if not data:
                return digest.hexdigest(), size
            digest.update(data)
            size += len(data)


def unlink(path):
    """Remove ``path``; gone already is fine."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
