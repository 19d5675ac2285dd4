"""The WSME answer types: JSON keys in declaration order, null kept, unset
left out, engine-internal keys dropped."""

import datetime

from cyquota.api.types import quota_usage
from cyquota.api.types import reservation


def test_keys_keep_their_order_nulls_and_absences():
    usage = {'used': 3, 'reserved': 0, 'limit': 5, 'available': 2}
    body = quota_usage.QuotaUsageResponse.from_dict({'quota_usage': {
        'project_id': 'p', 'parent_id': None,
        'resources': {'FPGA': dict(usage, tree=dict(usage, root_id='r')),
                      'GPU': usage}}}).to_json()
    resources = body['quota_usage']['resources']
    assert list(body['quota_usage']) == ['project_id', 'parent_id',
                                         'resources']
    assert body['quota_usage']['parent_id'] is None
    assert list(resources['FPGA']) == ['limit', 'used', 'reserved',
                                       'available', 'tree']
    assert list(resources['FPGA']['tree']) == ['root_id', 'limit', 'used',
                                               'reserved', 'available']
    assert 'tree' not in resources['GPU']


def test_a_row_shows_its_declared_keys_with_times_in_utc():
    created = datetime.datetime(2030, 1, 1, 12, 0, 0, 250000)
    row = {'id': 7, 'uuid': 'u', 'project_id': 'p', 'resource': 'FPGA',
           'delta': 1, 'status': 'reserved', 'request_id': None,
           'consumer_id': None, 'expire': created, 'created_at': created,
           'updated_at': None, 'deleted': 0}
    body = reservation.Reservation.from_dict(row).to_json()
    assert list(body) == ['uuid', 'project_id', 'resource', 'delta',
                          'status', 'request_id', 'consumer_id', 'expire',
                          'created_at', 'updated_at']
    assert body['created_at'] == '2030-01-01T12:00:00.250000+00:00'
    assert body['updated_at'] is None
