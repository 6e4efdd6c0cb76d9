"""``params['ports']`` on build and rebuild tasks reach the driver's
``ports`` keyword (only when the driver takes it), the fake driver keeps
them in its domain record, a rebuild without them keeps the domain's, and
a live migration carries them to the destination host."""

from compute_agent import tasks
from compute_agent.net import ports as net_ports
from compute_agent.virt import fake
from tests.unit.compute_agent.port_data import port

UUID = '11111111-2222-3333-4444-555555555555'


class _View:
    def __init__(self, driver, conf):
        self.driver, self.conf, self.image_cache = driver, conf, None
        self.host = driver.host

    def image_client(self, params):
        return None

    def progress(self, inst, **kwargs):
        pass


def _inst():
    return {'uuid': UUID, 'name': 'vm', 'image_ref': 'img',
            'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512,
            'disk_gb': 1}


def _driver(tmp_path, host='h1'):
    drv = fake.FakeDriver(state_dir=str(tmp_path))
    drv.init_host(host)
    return drv


def test_build_and_rebuild_pass_ports_and_the_fake_keeps_them(conf,
                                                             tmp_path):
    drv = _driver(tmp_path)
    view = _View(drv, conf)
    tasks.HANDLERS['build'](view, _inst(), {'ports': [port(1), port(2)]})
    want = net_ports.checked([port(1), port(2)])
    assert drv.domain_record(UUID)['ports'] == want
    assert drv.domain_ports() == {UUID: want}

    tasks.HANDLERS['rebuild'](view, _inst(), {'image_ref': 'img2'})
    assert drv.domain_record(UUID)['ports'] == want     # kept
    tasks.HANDLERS['rebuild'](view, _inst(), {'image_ref': 'img2',
                                              'ports': [port(3)]})
    assert drv.domain_ports(UUID) == {UUID: net_ports.checked([port(3)])}
    tasks.HANDLERS['rebuild'](view, _inst(), {'image_ref': 'img2',
                                              'ports': []})
    assert drv.domain_ports() == {}


def test_a_build_without_ports_has_none(conf, tmp_path):
    drv = _driver(tmp_path)
    tasks.HANDLERS['build'](_View(drv, conf), _inst(), {})
    assert drv.domain_record(UUID)['ports'] == []
    assert drv.domain_ports() == {}


def test_a_driver_without_the_keyword_is_called_as_before(conf, tmp_path):
    calls = []

    class OldDriver(fake.FakeDriver):
        def spawn(self, uuid, *, name, flavor, image_ref):
            calls.append(uuid)
            super().spawn(uuid, name=name, flavor=flavor, image_ref=image_ref)

    drv = OldDriver(state_dir=str(tmp_path))
    drv.init_host('h1')
    tasks.HANDLERS['build'](_View(drv, conf), _inst(), {'ports': [port(1)]})
    assert calls == [UUID]


def test_ports_move_with_a_live_migration(conf, tmp_path):
    source, dest = _driver(tmp_path, 'h1'), _driver(tmp_path, 'h2')
    tasks.HANDLERS['build'](_View(source, conf), _inst(),
                            {'ports': [port(1)]})
    tasks.HANDLERS['live_migrate'](_View(source, conf), _inst(),
                                   {'dest': 'h2'})
    assert source.domain_ports() == {}
    assert dest.domain_ports() == {UUID: net_ports.checked([port(1)])}
