"""``openstack accelerator lease list`` and ``reservation list`` against a
real ``cyquota-api`` whose ``[api] max_limit`` is 3: they read every page,
``--limit`` caps the total across pages and ``--marker`` starts after an
item; the output is the one a single page gave."""

import json

import pytest
import requests

from tests.functional.test_osc import _admin_call
from tests.functional.test_osc import _api_server
from tests.functional.test_osc import _json
from tests.functional.test_osc import FUTURE
from tests.functional.test_osc import migrated  # noqa: F401 (fixture)
from tests.functional.test_osc import openstack  # noqa: F401 (fixture)

MEMBER = {'X-Project-Id': 'paging-p', 'X-User-Id': 'alice',
          'X-Roles': 'member'}


@pytest.fixture(scope='module')
def small_pages(migrated, tmp_path_factory):  # noqa: F811 (the fixture)
    """A noauth cyquota-api that answers at most 3 items a page, with a
    device of 100 FPGAs."""
    with _api_server(migrated, tmp_path_factory.mktemp('osc-paging'), {
            'api': {'max_limit': '3'}}) as server:
        provider = _admin_call(server, 'POST', '/v1/resource_providers',
                               {'name': 'paging-node'})
        _admin_call(server, 'PUT', '/v1/resource_providers/%s/inventories'
                    % provider['uuid'], {
                        'resource_provider_generation': 0,
                        'inventories': {'FPGA': {'total': 100}}})
        yield server


@pytest.fixture
def admin(small_pages, openstack):  # noqa: F811 (the fixture)
    def run(*argv):
        return openstack('--os-auth-type', 'none', '--os-endpoint',
                         small_pages.url, '--os-accelerator-quota-roles',
                         'admin', '--os-accelerator-quota-project-id', 'ops',
                         *argv)
    return run


def _post(server, path, body, headers):
    answer = requests.post(server.url + path, json=body, headers=headers,
                           timeout=30)
    answer.raise_for_status()
    return answer.json()


def _ids(result, column):
    return [row[column] for row in _json(result)]


def test_lease_list_reads_every_page(small_pages, admin):
    made = [_post(small_pages, '/v1/leases', {'lease': {
        'name': 'lease-%d' % n, 'end_date': FUTURE, 'reservations': [
            {'resource_type': 'accelerator:FPGA', 'amount': 1}]}},
        MEMBER)['lease'] for n in range(8)]
    newest_first = [lease['id'] for lease in reversed(made)]
    assert requests.get(small_pages.url + '/v1/leases', headers=MEMBER,
                        timeout=30).json()['leases_links']

    listed = _json(admin('accelerator', 'lease', 'list', '--project',
                         'paging-p', '-f', 'json'))
    assert [row['ID'] for row in listed] == newest_first
    assert listed[0] == {
        'ID': made[-1]['id'], 'Name': 'lease-7', 'Project ID': 'paging-p',
        'Status': 'ACTIVE', 'Start Date': made[-1]['start_date'],
        'End Date': FUTURE}
    lease_list = ('accelerator', 'lease', 'list', '--project', 'paging-p',
                  '-f', 'json')
    assert _ids(admin(*lease_list, '--limit', '5'), 'ID') == \
        newest_first[:5]
    assert _ids(admin(*lease_list, '--marker', newest_first[1], '--limit',
                      '4'), 'ID') == newest_first[2:6]
    assert _ids(admin(*lease_list, '--marker', newest_first[1]),
                'ID') == newest_first[2:]

    for lease_id in newest_first[:4]:
        requests.delete(small_pages.url + '/v1/leases/' + lease_id,
                        headers=MEMBER, timeout=30).raise_for_status()
    assert _ids(admin(*lease_list, '--status', 'ENDED'), 'ID') == \
        newest_first[:4]
    listed = _json(admin(*lease_list, '--long', '--status', 'ACTIVE'))
    assert [row['ID'] for row in listed] == newest_first[4:]
    assert listed[0]['Reservations'][0]['allocations'][0][
        'resource_provider_name'] == 'paging-node'

    code, out, err = admin('accelerator', 'lease', 'list', '--marker',
                           'no-such-lease')
    assert (code, out) == (1, '')
    assert err.startswith('marker [no-such-lease] not found (HTTP 400 '
                          'cyquota.invalid_query, req-')
    assert err.count('\n') == 1
    code, out, err = admin('accelerator', 'lease', 'list', '--limit', '0')
    assert (code, out) == (1, '')
    assert err.startswith("Invalid query string parameters: 'limit' must be "
                          "a positive integer. Got: 0 (HTTP 400 ")


def test_reservation_list_reads_every_page(small_pages, admin):
    service = {'X-Project-Id': 'service-project', 'X-Roles': 'service'}
    made = [_post(small_pages, '/v1/reservations', {
        'project_id': 'paging-r', 'deltas': {'FPGA': 1}},
        service)['reservations'][0] for _ in range(7)]
    newest_first = made[::-1]
    reservation_list = ('accelerator', 'reservation', 'list', '--project',
                        'paging-r', '-f', 'json')
    listed = _json(admin(*reservation_list))
    assert [row['UUID'] for row in listed] == newest_first
    assert sorted(listed[0]) == sorted([
        'UUID', 'Project ID', 'Resource', 'Delta', 'Status', 'Request ID',
        'Consumer ID', 'Expire', 'Created At'])
    assert _ids(admin(*reservation_list, '--limit', '4'), 'UUID') == \
        newest_first[:4]
    assert _ids(admin(*reservation_list, '--marker', newest_first[2]),
                'UUID') == newest_first[3:]
    code, out, _ = admin('accelerator', 'reservation', 'list', '--project',
                         'paging-r', '--status', 'reserved', '--limit', '5',
                         '-f', 'value', '-c', 'UUID')
    assert (code, out.split()) == (0, newest_first[:5])
    assert json.loads(admin(*reservation_list, '--marker',
                            newest_first[-1])[1]) == []
