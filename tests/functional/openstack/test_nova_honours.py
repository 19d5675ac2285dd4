"""Nova honours cyquota (SPEC 3.7), on the bed: a running lease's devices
are not scheduled, one Keystone limit is read by both, a lease pool kept
by Nova's isolated aggregates receives no ordinary server."""

import uuid

import pytest

from servers.openstack_bed import stand_ins
from tests.functional.openstack import books

pytestmark = [pytest.mark.openstack_bed, pytest.mark.timeout(1800)]


def _fpgas_per_device(bed):
    return [bed.call('placement', 'GET', '/resource_providers/%s/inventories'
                     % bed.device_provider(host)['uuid']
                     ).json()['inventories']['FPGA']['total']
            for host in bed.hosts]


def test_a_running_lease_of_every_fpga_leaves_nova_no_valid_host(
        bed, project, fpga_profile):
    devices = _fpgas_per_device(bed)
    fpgas = sum(devices)
    books.set_limit(bed, project, fpgas)
    lease = books.lease(bed, *devices)
    assert lease['status'] == 'ACTIVE', lease
    try:
        held = bed.allocations(lease['id'])
        assert sum(a['resources']['FPGA'] for a in held.values()) == fpgas

        refused = bed.boot(device_profile=fpga_profile, session=bed.member)

        assert refused['status'] == 'ERROR'
        assert 'No valid host was found' in refused['fault']['message']
    finally:
        books.end_lease(bed, lease['id'])
    assert bed.allocations(lease['id']) == {}

    server = bed.boot(device_profile=fpga_profile, session=bed.member)

    assert server['status'] == 'ACTIVE', server.get('fault')
    for done in (refused, server):
        bed.delete_server(done['id'])


@pytest.fixture
def keystone_limits(bed, project):
    """cyquota reading Keystone's limits of Nova's compute endpoint;
    ``keystone_limits(n)`` sets the demo project's ``class:FPGA`` to n.
    cyquota reads its own limits again afterwards."""
    made = []

    def limit(amount):
        made.append(books.keystone_limit(bed, project, amount))
    bed.restart_cyquota(quota={'limit_source': 'keystone'})
    yield limit
    for limit_id in made:
        books.delete_keystone_limit(bed, limit_id)
    bed.restart_cyquota(quota={'limit_source': 'local'})


def test_nova_and_cyquota_refuse_at_the_same_count_of_one_keystone_limit(
        bed, project, keystone_limits, fpga_profile):
    used = books.used(bed, project)
    keystone_limits(used + 1)
    server = bed.boot(device_profile=fpga_profile, session=bed.member)
    assert server['status'] == 'ACTIVE', server.get('fault')
    try:
        refused = bed.call('compute', 'POST', '/servers', {'server': {
            'name': 'over', 'imageRef': stand_ins.IMAGE_ID,
            'flavorRef': bed.flavor(fpga_profile),
            'networks': 'none'}}, session=bed.member, expect=None)
        assert refused.status_code == 403, refused.text
        assert 'class:FPGA is over limit of %d' % (used + 1) in refused.text

        answer = bed.call(books.QUOTA, 'POST', '/v1/reservations', {
            'project_id': project, 'deltas': {'FPGA': 1}, 'dry_run': True},
            session=bed.service('cyquota'), expect=None)
        assert answer.json()['allowed'] is False, answer.text
        [over] = answer.json()['overs']
        assert (over['limit'], over['used']) == (used + 1, used + 1)
    finally:
        bed.delete_server(server['id'])


def test_a_lease_pool_kept_by_isolated_aggregates_gets_no_ordinary_server(
        bed, fpga_profile):
    pool_host = bed.hosts[-1]
    aggregate = bed.call('compute', 'POST', '/os-aggregates', {
        'aggregate': {'name': 'pool-%s' % uuid.uuid4().hex[:6]}}).json()[
        'aggregate']
    bed.call('compute', 'POST', '/os-aggregates/%s/action' % aggregate['id'],
             {'add_host': {'host': pool_host}})
    bed.call('compute', 'POST', '/os-aggregates/%s/action' % aggregate['id'],
             {'set_metadata': {'metadata': {
                 'trait:CUSTOM_CYQUOTA_POOL': 'required'}}})
    books.set_trait(bed, pool_host, 'CUSTOM_CYQUOTA_POOL')
    booted = []
    try:
        for _ in range(4):
            server = bed.boot(device_profile=fpga_profile,
                              session=bed.member)
            booted.append(server['id'])
            assert server['status'] == 'ACTIVE', server.get('fault')
            host = bed.server(server['id'])['OS-EXT-SRV-ATTR:host']
            assert host != pool_host
    finally:
        for server_id in booted:
            bed.delete_server(server_id)
        books.set_trait(bed, pool_host, 'CUSTOM_CYQUOTA_POOL', present=False)
        bed.call('compute', 'POST',
                 '/os-aggregates/%s/action' % aggregate['id'],
                 {'remove_host': {'host': pool_host}})
        bed.call('compute', 'DELETE', '/os-aggregates/%s' % aggregate['id'])
