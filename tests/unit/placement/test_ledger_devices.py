"""Reservations that name devices: the ledger and the device claims move
together, in one transaction."""

import pytest
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota import exception
from cyquota.placement import allocations
from cyquota.placement import device_errors
from cyquota import quota

Q = quota.QUOTAS
ONE = {'FPGA': {'total': 1}}


def _separate(count):
    """``count`` FPGAs on as many devices of one tree (Placement never
    splits one class's amount of a group across providers)."""
    params = {'resources%d' % n: 'FPGA:1' for n in range(1, count + 1)}
    params['group_policy'] = 'isolate'
    return params


@pytest.fixture
def devices(tree):
    """cn1 (in aggA) with dev1 and dev2, cn2 (in aggB) with dev3."""
    tree.provider('cn1', aggs=['aggA'])
    tree.provider('dev1', parent='cn1', inventory=ONE)
    tree.provider('dev2', parent='cn1', inventory=ONE)
    tree.provider('cn2', aggs=['aggB'])
    tree.provider('dev3', parent='cn2', inventory=ONE)
    return tree


def _held(ctx, consumer):
    return allocations.get_for_consumer(ctx, consumer)['allocations']


def _count(table):
    with db_api.get_engine().connect() as conn:
        return conn.execute(sa.text('SELECT COUNT(*) FROM %s' % table)
                            ).scalar()


def test_reserve_claims_devices_and_commit_keeps_them(devices, ctx):
    # Two devices of one tree: only cn1 has two.
    uuids = Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm1',
                      devices=_separate(2))
    held = _held(ctx, 'vm1')
    assert {devices.name_of(rp) for rp in held} == {'dev1', 'dev2'}
    Q.commit(ctx, 'p1', uuids)
    assert _held(ctx, 'vm1') == held
    assert Q.get_project_usage(ctx, 'p1')['FPGA']['used'] == 2


def test_forbidden_aggregate_steers_the_claim(devices, ctx):
    Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm1',
              devices={'resources': 'FPGA:1',
                       'member_of': '!' + devices.aggregate('aggA')})
    assert [devices.name_of(rp) for rp in _held(ctx, 'vm1')] == ['dev3']


@pytest.mark.parametrize('end', ['rollback', 'expire'])
def test_a_reserve_that_does_not_commit_frees_its_devices(devices, ctx,
                                                          end):
    uuids = Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm1',
                      devices=_separate(2), expire=0.01)
    assert _held(ctx, 'vm1')
    if end == 'rollback':
        Q.rollback(ctx, 'p1', uuids)
    else:
        import time
        time.sleep(0.05)
        assert Q.expire(ctx) == 1
    assert _held(ctx, 'vm1') == {}
    # cn1's two devices are free for the next consumer.
    Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm2',
              devices=_separate(2))
    assert len(_held(ctx, 'vm2')) == 2


def test_release_frees_devices_once_the_consumer_holds_nothing(devices,
                                                               ctx):
    Q.commit(ctx, 'p1', Q.reserve(
        ctx, 'p1', {'FPGA': 2}, consumer_id='vm1', devices=_separate(2)))
    Q.release(ctx, 'p1', {'FPGA': 1}, consumer_id='vm1')
    assert _held(ctx, 'vm1')
    Q.release(ctx, 'p1', {'FPGA': 1}, consumer_id='vm1')
    assert _held(ctx, 'vm1') == {}
    assert Q.get_project_usage(ctx, 'p1')['FPGA']['used'] == 0


def test_a_retried_reserve_claims_once(devices, ctx):
    first = Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm1',
                      request_id='r1', devices={'resources': 'FPGA:1'})
    again = Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm1',
                      request_id='r1', devices={'resources': 'FPGA:1'})
    assert first == again
    assert len(_held(ctx, 'vm1')) == 1


def test_devices_need_a_consumer(devices, ctx):
    with pytest.raises(exception.Invalid, match='consumer_id is required'):
        Q.reserve(ctx, 'p1', {'FPGA': 1}, devices={'resources': 'FPGA:1'})
    assert _count('reservations') == 0


@pytest.mark.parametrize('deltas, params, error, text', [
    ({'FPGA': 2}, {'resources': 'FPGA:1'}, exception.Invalid,
     'devices ask for FPGA: 1 but the positive deltas are FPGA: 2'),
    ({'FPGA': 1}, {'resources': 'FPGA:1', 'member_of': 'in:x,!y'},
     exception.InvalidQuery, "Expected 'member_of' parameter to contain "
                             "valid UUID(s). Got: x"),
    ({'FPGA': 1}, {}, exception.InvalidQuery,
     'At least one request group'),
])
def test_bad_device_requests_change_nothing(devices, ctx, deltas, params,
                                            error, text):
    with pytest.raises(error, match=text.replace('(', r'\(').replace(
            ')', r'\)')):
        Q.reserve(ctx, 'p1', deltas, consumer_id='vm1', devices=params)
    assert _count('reservations') == 0
    assert _held(ctx, 'vm1') == {}


def test_over_quota_claims_nothing(devices, ctx):
    Q.limits.set_registered_limit(ctx, 'FPGA', 1)
    with pytest.raises(exception.OverQuota):
        Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm1',
                  devices={'resources': 'FPGA:2'})
    assert _held(ctx, 'vm1') == {}


def test_no_device_fits_and_nothing_is_reserved(devices, ctx):
    with pytest.raises(device_errors.NoValidAllocation):
        Q.reserve(ctx, 'p1', {'FPGA': 4}, consumer_id='vm1',
                  devices={'resources': 'FPGA:4'})
    assert _count('reservations') == 0
    assert Q.get_project_usage(ctx, 'p1')['FPGA']['reserved'] == 0


def test_holds_any_follows_the_claim(devices, ctx):
    assert not allocations.holds_any(ctx, 'vm1')
    uuids = Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm1',
                      devices={'resources': 'FPGA:1'})
    assert allocations.holds_any(ctx, 'vm1')
    Q.rollback(ctx, 'p1', uuids)
    assert not allocations.holds_any(ctx, 'vm1')
