"""An ACTIVE lease grows (SPEC 3.5), on the embedded database with a clock
the tests move: it keeps its devices and takes more for the rest of its
window, checked against quota and device capacity from now to its end;
it never shrinks; a refusal changes nothing; its end gives everything
back; and the books stay consistent (the ``quota check`` of
cyquota-manage)."""

import json

import pytest

from cyquota import exception
from cyquota import leases
from cyquota.placement import device_errors
from cyquota.quota import QUOTAS
from tests import enforcement_helpers
from tests.unit import strict_two_level
from tests.unit.test_engine import clock, rows  # noqa: F401,H301
from tests.unit.test_leases import at, lease, pool, usage  # noqa: F401,H301

LEASES = leases.LEASES


def grow(ctx, made, amount, **extra):
    return LEASES.update(ctx, made['id'], dict(extra, reservations=[
        {'id': made['reservations'][0]['id'], 'amount': amount}]))


def devices(view):
    return sorted((a['resource_provider_name'], a['amount'])
                  for r in view['reservations'] for a in r['allocations'])


def held(made):
    """What the lease holds on each device, as the device usages count."""
    found = {}
    for row in rows('device_allocations', consumer_id=made['id']):
        found[row['resource_provider_id']] = (
            found.get(row['resource_provider_id'], 0) + row['used'])
    return sorted(found.values())


def no_drift(ctx):
    """What ``cyquota-manage quota check`` finds: nothing."""
    found = QUOTAS.check_drift(ctx)
    assert not found, found


def test_an_active_lease_grows_onto_more_devices(pool, ctx, clock):  # noqa
    made = lease(ctx, 2, 'now', at(2))
    assert devices(made) == [('dev1', 2)]
    clock.advance(600)
    grown = grow(ctx, made, 3)
    assert grown['status'] == 'ACTIVE'
    assert grown['reservations'][0]['amount'] == 3
    # The device it held is kept; the new one joins it.
    assert devices(grown) == [('dev1', 2), ('dev2', 1)]
    assert grown['reservations'][0]['allocations'][0] == \
        made['reservations'][0]['allocations'][0]
    assert LEASES.get(ctx, made['id']) == grown
    assert usage(ctx) == dict(limit=4, used=3, reserved=0, leased=3,
                              promised=0, available=1)
    assert held(made) == [1, 2]
    no_drift(ctx)

    LEASES.delete(ctx, made['id'])
    assert usage(ctx) == dict(limit=4, used=0, reserved=0, leased=0,
                              promised=0, available=4)
    assert rows('device_allocations', consumer_id=made['id']) == []
    no_drift(ctx)


def test_a_grown_lease_gives_it_all_back_at_its_end(pool, ctx, clock):  # noqa
    made = lease(ctx, 1, 'now', at(2))
    grow(ctx, made, 4, end_date=at(3))
    assert usage(ctx)['used'] == 4
    clock.advance(3 * 3600)
    assert LEASES.end_due(ctx) == 1
    assert LEASES.get(ctx, made['id'])['status'] == 'ENDED'
    assert usage(ctx) == dict(limit=4, used=0, reserved=0, leased=0,
                              promised=0, available=4)
    assert rows('device_allocations', consumer_id=made['id']) == []
    no_drift(ctx)


def test_an_active_lease_never_shrinks(pool, ctx):  # noqa: F811
    made = lease(ctx, 2, 'now', at(2))
    with pytest.raises(exception.LeaseConflict) as refused:
        grow(ctx, made, 1)
    assert str(refused.value) == (
        'Cannot lower the amounts of lease %s: it is ACTIVE.' % made['id'])
    # The same amount is no change.
    assert grow(ctx, made, 2) == LEASES.get(ctx, made['id'])
    assert devices(LEASES.get(ctx, made['id'])) == [('dev1', 2)]


def test_growing_over_quota_changes_nothing(pool, ctx):  # noqa: F811
    pool.provider('dev3', parent='cn1', inventory={'FPGA': {'total': 4}})
    made = lease(ctx, 2, 'now', at(2))
    lease(ctx, 2, at(1), at(3))
    with pytest.raises(exception.OverQuota) as over:
        grow(ctx, made, 3)
    [entry] = over.value.overs
    assert (entry['project_id'], entry['resource'], entry['scope'],
            entry['limit'], entry['requested'], entry['leases']) == (
        'p1', 'FPGA', 'project', 4, 3, 2)
    assert LEASES.get(ctx, made['id']) == made
    assert usage(ctx)['used'] == 2
    assert held(made) == [2]
    no_drift(ctx)


def test_growing_without_room_is_no_valid_allocation(
        pool, ctx):  # noqa: F811
    made = lease(ctx, 2, 'now', at(2))
    # Another project takes the other device from the next hour on.
    lease(ctx, 2, at(1), at(3), project='p2')
    with pytest.raises(device_errors.NoValidAllocation):
        grow(ctx, made, 3)
    assert LEASES.get(ctx, made['id']) == made
    assert held(made) == [2]
    # Until then it fits.
    assert devices(grow(ctx, made, 3, end_date=at(1))) == [
        ('dev1', 2), ('dev2', 1)]
    no_drift(ctx)


def test_the_devices_kept_take_room_over_the_new_window(
        pool, ctx):  # noqa: F811
    """A lease that grows and ends later keeps its devices over the whole
    new window: what it adds goes where they leave room then, never on
    top of them (here dev1, which another lease shares after the old
    end)."""
    made = lease(ctx, 1, 'now', at(1))
    assert devices(made) == [('dev1', 1)]
    other = lease(ctx, 1, at(1), at(2), project='p2')
    assert devices(other) == [('dev1', 1)]
    grown = grow(ctx, made, 2, end_date=at(2))
    assert devices(grown) == [('dev1', 1), ('dev2', 1)]


def test_a_filter_sees_both_leases_and_its_denial_changes_nothing(
        pool, ctx):  # noqa: F811
    with enforcement_helpers.asked_by_the_leases() as service:
        made = lease(ctx, 2, 'now', at(2))
        grown = grow(ctx, made, 3)
        path, body = service.requests[-1]['path'], json.loads(
            service.requests[-1]['body'])
        assert path == '/check-update'
        assert body['current_lease']['id'] == body['lease']['id'] == \
            made['id']
        [before] = body['current_lease']['reservations']
        [after] = body['lease']['reservations']
        assert (before['amount'], after['amount']) == (2, 3)
        shown = {a['id']: a['resource_provider_name']
                 for r in grown['reservations'] for a in r['allocations']}
        assert [a['resource_provider_name']
                for a in before['allocations']] == ['dev1']
        assert sorted(a['resource_provider_name']
                      for a in after['allocations']) == ['dev1', 'dev2']
        assert {a['id'] for a in after['allocations']} == set(shown)

        service.answer = (403, b'{"message": "no more FPGAs"}')
        with pytest.raises(exception.EnforcementDenied) as denied:
            grow(ctx, grown, 4)
        assert denied.value.message == 'no more FPGAs'
    assert LEASES.get(ctx, made['id']) == grown
    assert usage(ctx)['used'] == 3
    no_drift(ctx)


def test_a_device_shows_once_and_holds_at_most_max_unit(pool, ctx):  # noqa
    """A lease's parts on one device are one allocation (its view, and
    Placement's with write-back): a grow adds to it within the device's
    max_unit, and takes the rest elsewhere."""
    assert devices(lease(ctx, 4, 'now', at(2), project='p2')) == [
        ('dev1', 2), ('dev2', 2)]
    pool.provider('dev3', parent='cn1', inventory={
        'FPGA': {'total': 4, 'max_unit': 2}})
    pool.provider('dev4', parent='cn1', inventory={'FPGA': {'total': 2}})
    made = lease(ctx, 1, 'now', at(2))
    assert devices(grow(ctx, made, 2)) == [('dev3', 2)]
    assert devices(grow(ctx, made, 3)) == [('dev3', 2), ('dev4', 1)]
    assert held(made) == [1, 2]
    no_drift(ctx)


def test_a_grow_shares_the_trees_limit(pool, ctx):  # noqa: F811
    """Under strict-two-level the root's limit (4) holds over the rest of
    the window for the whole tree: a child's lease grows into what the
    tree leaves free, and no further."""
    with strict_two_level.root_over_a_and_b(pool, ctx):
        made = lease(ctx, 1, 'now', at(2), project='a')
        lease(ctx, 2, at(1), at(2), project='b')
        with pytest.raises(exception.OverQuota) as over:
            grow(ctx, made, 3)
        assert [(o['scope'], o['project_id'], o['limit'], o['requested'])
                for o in over.value.overs] == [('tree', 'root', 4, 3)]
        assert LEASES.get(ctx, made['id']) == made
        grown = grow(ctx, made, 2)
        assert grown['reservations'][0]['amount'] == 2
        tree = usage(ctx, 'a')['tree']
        assert (tree['used'], tree['available']) == (2, 0)
        no_drift(ctx)
        LEASES.delete(ctx, made['id'])
        assert usage(ctx, 'a')['tree']['used'] == 0
        no_drift(ctx)
