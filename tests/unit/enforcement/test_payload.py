"""The documents filters get: exactly the keys of the contract."""

import datetime
import json

import pytest

from cyquota.enforcement import payload
from tests import enforcement_helpers as helpers

UTC = datetime.timezone.utc


def test_context_has_exactly_the_four_keys(tmp_path):
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'auth_url': 'https://keystone.example.com:5000/v3',
        'region_name': 'RegionOne'}})
    context = helpers.request_context('p-1', 'u-1')
    context.auth_token = 'secret-token'
    assert payload.context_payload(context, conf) == {
        'user_id': 'u-1', 'project_id': 'p-1',
        'auth_url': 'https://keystone.example.com:5000/v3',
        'region_name': 'RegionOne'}


def test_context_auth_url_and_region_default_to_none(tmp_path):
    conf = helpers.make_conf(tmp_path)
    document = payload.context_payload(helpers.request_context(), conf)
    assert document['auth_url'] is None and document['region_name'] is None


def test_context_reads_the_global_configuration_by_default():
    document = payload.context_payload(helpers.request_context())
    assert sorted(document) == ['auth_url', 'project_id', 'region_name',
                                'user_id']


def test_lease_keeps_only_the_contract_keys():
    reservation = {
        'id': 'res-uuid', 'lease_id': 'lease-uuid', 'created_at': 'x',
        'resource_type': 'accelerator:FPGA', 'amount': 2,
        'member_of': ['in:agg-1,agg-2'], 'member_key': 'reservation:k',
        'status': 'pending',
        'allocations': [{'id': 'rp-uuid', 'resource_provider_name': 'fpga0',
                         'amount': 1, 'consumer_id': 'lease-uuid',
                         'extra': {'root_provider': 'host-1',
                                   'aggregates': ['agg-1'],
                                   'traits': ['CUSTOM_X']}}]}
    document = payload.lease_payload(
        'my-lease', datetime.datetime(2030, 1, 1, tzinfo=UTC),
        datetime.datetime(2030, 1, 2, tzinfo=UTC), [reservation])
    assert document == {
        'name': 'my-lease',
        'start_date': '2030-01-01T00:00:00+00:00',
        'end_date': '2030-01-02T00:00:00+00:00',
        'reservations': [{
            'resource_type': 'accelerator:FPGA', 'amount': 2,
            'member_of': ['in:agg-1,agg-2'], 'member_key': 'reservation:k',
            'allocations': [{
                'id': 'rp-uuid', 'resource_provider_name': 'fpga0',
                'extra': {'root_provider': 'host-1', 'aggregates': ['agg-1'],
                          'traits': ['CUSTOM_X']}}]}]}
    assert json.loads(json.dumps(document)) == document


def test_lease_optional_fields_get_defaults():
    document = payload.lease_payload(
        None, datetime.datetime(2030, 1, 1), datetime.datetime(2030, 1, 2),
        [{'resource_type': 'accelerator:GPU', 'amount': 1,
          'allocations': [{'id': 'rp'}]}])
    assert document['reservations'] == [{
        'resource_type': 'accelerator:GPU', 'amount': 1, 'member_of': [],
        'member_key': None,
        'allocations': [{'id': 'rp', 'resource_provider_name': None,
                         'extra': {}}]}]


def test_extra_is_copied():
    extra = {'aggregates': ['agg-1']}
    document = payload.lease_payload(
        'l', helpers.START, helpers.START,
        [{'resource_type': 'accelerator:FPGA', 'amount': 1,
          'allocations': [{'id': 'rp', 'extra': extra}]}])
    extra['aggregates'].append('agg-2')
    assert document['reservations'][0]['allocations'][0]['extra'] == {
        'aggregates': ['agg-1']}


@pytest.mark.parametrize('value, expected', [
    (datetime.datetime(2030, 5, 13, 12, 30), '2030-05-13T12:30:00+00:00'),
    (datetime.datetime(2030, 5, 13, 12, 30, tzinfo=UTC),
     '2030-05-13T12:30:00+00:00'),
    (datetime.datetime(2030, 5, 13, 14, 30, 0, 12345,
                       tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
     '2030-05-13T12:30:00.012345+00:00'),
])
def test_dates_are_iso_8601_with_an_explicit_utc_offset(value, expected):
    assert payload.format_date(value) == expected
    assert payload.parse_date(expected) == value.replace(
        tzinfo=value.tzinfo or UTC)


def test_a_date_must_be_a_datetime():
    with pytest.raises(TypeError):
        payload.format_date('2030-05-13T12:30:00+00:00')


def test_parse_date_refuses_a_date_without_offset():
    with pytest.raises(ValueError):
        payload.parse_date('2030-05-13T12:30:00')
