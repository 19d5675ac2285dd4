"""Cyborg's binds move cyquota's books (SPEC 3.7), on the bed: real Nova
boots servers whose flavor names a device profile, real Cyborg binds
their ARQs through cyquota's filter."""

import datetime

import pytest

from tests.functional.openstack import books

pytestmark = [pytest.mark.openstack_bed, pytest.mark.timeout(1800)]


@pytest.fixture
def servers(bed, fpga_profile):
    """Boots as the demo member; every server deleted afterwards."""
    booted = []

    def boot():
        server = bed.boot(device_profile=fpga_profile, session=bed.member)
        booted.append(server['id'])
        return server
    yield boot
    for server_id in booted:
        if bed.call('compute', 'GET', '/servers/%s' % server_id,
                    expect=None).status_code != 404:
            bed.delete_server(server_id)


def test_a_boot_within_quota_counts_one_fpga_for_the_instance(
        bed, project, servers):
    before = books.used(bed, project)

    server = servers()

    assert server['status'] == 'ACTIVE', server.get('fault')
    assert books.used(bed, project) == before + 1
    [arq] = bed.arqs(instance=server['id'])
    [committed] = [r for r in books.reservations(bed, project, 'committed')
                   if r['request_id'] == 'arq-%s' % arq['uuid']]
    assert (committed['consumer_id'], committed['resource'],
            committed['delta']) == (server['id'], 'FPGA', 1)

    bed.delete_server(server['id'])

    assert books.used(bed, project) == before


def test_a_boot_over_quota_fails_at_bind_and_the_refusal_is_findable(
        bed, project, servers, notifications):
    books.set_limit(bed, project, books.used(bed, project))
    before = books.usage(bed, project)

    server = servers()

    assert server['status'] == 'ERROR'
    # Nova drops Cyborg's error body: cyquota's record tells why.
    assert '403' in server['fault']['message'], server['fault']
    [refusal] = books.refusals(bed, server['id'])
    assert refusal['project_id'] == project
    [over] = refusal['overs']
    assert (over['resource'], over['requested']) == ('FPGA', 1)
    after = books.usage(bed, project)
    assert (after['used'], after['reserved']) == (before['used'],
                                                  before['reserved'])
    heard = notifications('accelerator.quota.over_quota')
    assert server['id'] in [payload['consumer_id'] for payload in heard]


def test_a_bind_that_fails_in_cyborg_rolls_back(bed, project, servers):
    before = books.usage(bed, project)
    with books.attach_handles_taken(bed):
        server = servers()

    assert server['status'] == 'ERROR'
    after = books.usage(bed, project)
    assert (after['used'], after['reserved']) == (before['used'],
                                                  before['reserved'])
    rolled_back = [r['consumer_id'] for r in books.reservations(
        bed, project, 'rolled_back')]
    assert server['id'] in rolled_back


def test_a_pending_lease_keeps_its_promise_against_a_boot_nova_admits(
        bed, project, servers):
    books.set_limit(bed, project, books.used(bed, project) + 1)
    lease = books.lease(bed, 1, start=datetime.timedelta(hours=1))
    try:
        assert lease['status'] == 'PENDING'

        server = servers()

        # Nova has no limit on FPGAs here and scheduled it; cyquota refused
        # the bind, because the lease was promised the project's last one.
        assert server['status'] == 'ERROR'
        assert books.refusals(bed, server['id'])
    finally:
        books.end_lease(bed, lease['id'])
