"""The libvirt driver's diagnostics of a domain, read from libvirt's test
driver (its counters are the test driver's own), in the shape the API's
Nova bodies are made from (Tempest's 2.48 schema as the oracle)."""

import jsonschema
import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from api import diagnostics as api_diagnostics  # noqa: E402
from common.states import power  # noqa: E402
from compute_agent.virt import driver as virt  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402


@pytest.fixture
def drv(make_driver):
    return make_driver()


def test_a_running_domain_reads_its_memory_cpus_and_disk(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    raw = drv.get_diagnostics(uuid)
    assert raw['power_state'] == power.RUNNING
    assert raw['memory_kib'] == TINY.memory_mb * 1024
    assert len(raw['cpus']) == TINY.vcpus
    assert [d['dev'] for d in raw['disks']] == ['vda']
    from tempest.lib.api_schema.response.compute.v2_48 import servers
    body = api_diagnostics.standard(raw, {'launched_at': None})
    jsonschema.validate(body, servers.show_server_diagnostics[
        'response_body'])
    assert body['memory_details']['maximum'] == TINY.memory_mb
    legacy = api_diagnostics.legacy(raw)
    assert legacy['memory'] == TINY.memory_mb * 1024
    assert 'cpu0_time' in legacy and 'vda_read_req' in legacy
    drv.power_off(uuid)
    assert drv.get_diagnostics(uuid)['power_state'] == power.SHUTDOWN


def test_no_domain_is_domain_not_found(drv):
    with pytest.raises(virt.DomainNotFound):
        drv.get_diagnostics(new_uuid())
