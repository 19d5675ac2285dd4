"""The bed itself: a server with one fake FPGA boots through Nova, Cyborg
and Placement, and its delete removes what it held."""

import pytest

pytestmark = [pytest.mark.openstack_bed,
              # The session's bed starts within the first test.
              pytest.mark.timeout(1800)]


def test_boot_binds_a_fake_fpga_and_delete_releases_it(bed):
    profile = bed.device_profile()  # one FPGA with CUSTOM_FAKE_DEVICE

    server = bed.boot(device_profile=profile)

    assert server['status'] == 'ACTIVE', server.get('fault')
    arqs = bed.arqs(instance=server['id'])
    assert [arq['state'] for arq in arqs] == ['Bound']
    host = bed.server(server['id'])['OS-EXT-SRV-ATTR:host']
    device = bed.device_provider(host)
    held = bed.allocations(server['id'])
    assert held[device['uuid']]['resources'] == {'FPGA': 1}
    assert arqs[0]['device_rp_uuid'] == device['uuid']

    bed.delete_server(server['id'])

    assert bed.arqs(instance=server['id']) == []
    assert bed.allocations(server['id']) == {}
