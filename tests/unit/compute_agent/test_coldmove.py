"""The disk transfer of a cold migration (compute_agent/coldmove.py): the
destination refuses a copy whose SHA-256 or size is not the source's, and
removes it; a source whose move fails runs again with its disk untouched."""

import hashlib

import pytest

from common.flavors import Flavor
from common.images.client import GlanceClient
from common.states import power
from compute_agent import coldmove
from compute_agent.virt import fake
from compute_agent.virt.driver import VirtError

TINY = Flavor('tiny', 1, 512, 1)
DATA = b'a disk in transit' * 1000


class View:
    """What a task handler sees, without a bus; ``disk_sent`` fails as a
    destination that refused the copy would."""

    def __init__(self, driver, conf, host='h1'):
        self.driver, self.conf, self.host = driver, conf, host
        self.image_cache = None
        self.steps = []
        self.sent = []

    def image_client(self, params):
        spec = params.get('image') or {}
        return GlanceClient(spec['url']) if spec.get('url') else None

    def progress(self, inst, *, step=None, percent=None):
        self.steps.append(step)

    def disk_sent(self, inst, disk):
        self.sent.append(disk)
        raise VirtError('the disk received is corrupt')


def test_a_copy_with_another_sha256_is_refused_and_removed(glance, tmp_path):
    image_id = glance.add(DATA)
    path = str(tmp_path / 'disk')
    with pytest.raises(VirtError, match='corrupt'):
        coldmove.fetch(GlanceClient(glance.url), image_id, path,
                       sha256=hashlib.sha256(b'another').hexdigest(),
                       size=len(DATA))
    assert not (tmp_path / 'disk').exists()


def test_a_copy_of_another_size_is_refused(glance, tmp_path):
    image_id = glance.add(DATA)
    with pytest.raises(VirtError, match='corrupt'):
        coldmove.fetch(GlanceClient(glance.url), image_id,
                       str(tmp_path / 'disk'),
                       sha256=hashlib.sha256(DATA).hexdigest(),
                       size=len(DATA) + 1)


def test_a_good_copy_is_kept(glance, tmp_path):
    image_id = glance.add(DATA)
    coldmove.fetch(GlanceClient(glance.url), image_id, str(tmp_path / 'disk'),
                   sha256=hashlib.sha256(DATA).hexdigest(), size=len(DATA))
    assert (tmp_path / 'disk').read_bytes() == DATA


def test_a_failed_move_runs_the_source_again_untouched(glance, conf,
                                                       tmp_path):
    drv = fake.FakeDriver(state_dir=str(tmp_path))
    drv.init_host('h1')
    drv.spawn('u1', name='vm', flavor=TINY, image_ref='cirros')
    drv.write_disk('u1', b'the guest wrote this')
    before, record = drv.disk_content('u1'), drv.domain_record('u1')
    image_id = glance.add(b'', status='queued', disk_format='qcow2')
    view = View(drv, conf)
    with pytest.raises(VirtError, match='corrupt'):
        coldmove.send(view, {'uuid': 'u1'}, {
            'dest': 'h2', 'image_id': image_id,
            'image': {'url': glance.url}})
    [sent] = view.sent
    assert sent['sha256'] == hashlib.sha256(before).hexdigest()
    assert glance.images[image_id]['data'] == before     # what was uploaded
    assert drv.disk_content('u1') == before
    after = drv.domain_record('u1')
    assert after['power_state'] == power.RUNNING
    assert after['flavor'] == record['flavor']
