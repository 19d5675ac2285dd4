"""A claim's candidate, read a page at a time, is the full search's first,
in a number of statements that does not grow with the devices (the same
on PostgreSQL and MariaDB: tests/functional/test_claim_backends.py)."""

import datetime
import re
import uuid

import hypothesis
from hypothesis import strategies as st
import pytest
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import placement_models as pm
from cyquota.placement import allocations
from cyquota.placement import candidates
from cyquota.placement import claim_candidates
from cyquota.placement import inventories
from cyquota.placement import pools
from cyquota.placement import request as request_mod
from cyquota.placement import traits
from tests import fixtures

#: Two aggregates, then the lease pool's.
AGGREGATES = ['%08d-0000-4000-8000-000000000000' % n for n in range(3)]
POOL_KEY = 'reservation:r1'
CLASSES = ('FPGA', 'DISK_GB')


def _insert(conn, table, rows):
    if rows:
        conn.execute(table.__table__.insert(), rows)


def build(providers, pool=False):
    """Write providers straight into the tables, in list order (so ids
    follow it). Each is ``{"parent": index or None, "aggs": [aggregate
    index], "inventory": {rc: {total, reserved, ...}}, "used": {rc: n},
    "pending": {rc: n}, "sharing": bool}``; ``pool``: the last aggregate
    is a lease pool. Returns the providers' ids."""
    ids = list(range(1, len(providers) + 1))
    roots = []
    for spec in providers:
        parent = spec.get('parent')
        roots.append(len(roots) + 1 if parent is None else roots[parent])
    start = models.utcnow() + datetime.timedelta(days=1)
    with db_api.get_engine().begin() as conn:
        _insert(conn, pm.Aggregate, [
            dict(id=n + 1, uuid=agg) for n, agg in enumerate(AGGREGATES)])
        if pool:
            _insert(conn, pm.AggregateMetadata, [dict(
                aggregate_id=len(AGGREGATES), key=POOL_KEY, value='r1')])
        _insert(conn, pm.ResourceProvider, [dict(
            id=ids[n], uuid=str(uuid.UUID(int=ids[n])), name='rp%d' % ids[n],
            generation=0, root_provider_id=roots[n],
            parent_provider_id=(None if spec.get('parent') is None
                                else ids[spec['parent']]))
            for n, spec in enumerate(providers)])
        _insert(conn, pm.Inventory, [
            dict(dict(inventories.DEFAULTS, **fields),
                 resource_provider_id=ids[n], resource_class=rc)
            for n, spec in enumerate(providers)
            for rc, fields in spec.get('inventory', {}).items()])
        _insert(conn, pm.ProviderAggregate, [
            dict(resource_provider_id=ids[n], aggregate_id=agg + 1)
            for n, spec in enumerate(providers)
            for agg in sorted(set(spec.get('aggs', ())))])
        _insert(conn, pm.ProviderTrait, [
            dict(resource_provider_id=ids[n], trait=traits.SHARING)
            for n, spec in enumerate(providers) if spec.get('sharing')])
        _insert(conn, pm.DeviceAllocation, [
            dict(resource_provider_id=ids[n], consumer_id='other-%d' % n,
                 resource_class=rc, used=used)
            for n, spec in enumerate(providers)
            for rc, used in spec.get('used', {}).items() if used])
        _insert(conn, pm.LeaseAllocation, [
            dict(lease_id='lease-%d' % n, lease_reservation_id='r-%d' % n,
                 resource_provider_id=ids[n], resource_class=rc,
                 amount=amount, start_date=start,
                 end_date=start + datetime.timedelta(hours=1),
                 status=lease_models.PENDING)
            for n, spec in enumerate(providers)
            for rc, amount in spec.get('pending', {}).items() if amount])
    return ids


def devices(count, per_node=10):
    """The benchmark's cloud in small: nodes of ``per_node`` one-FPGA
    devices, the nodes in turn in the first two aggregates, every third
    node in the lease pool; the first device of a node is taken."""
    specs = []
    for node in range(count // per_node):
        aggs = [node % 2] + ([2] if node % 3 == 2 else [])
        root = len(specs)
        specs.append({'aggs': aggs})
        for n in range(per_node):
            specs.append({'parent': root, 'inventory': {'FPGA': {
                'total': 1}}, 'used': {'FPGA': 1 if n == 0 else 0}})
    return specs


#: A carrier that may carry the operator's pool keys.
OPERATOR = pools.Carrier('p', privileged=True)


def check_first(ctx, request, carrier=OPERATOR, trees=(1, 2, 3, 32)):
    """Assert that a claim, reading each number of ``trees`` first, finds
    the full search's first candidate (and its providers' uuids and
    generations); return
    it."""
    with db_api.reader_connection(ctx) as conn:
        rule = pools.rule_for(conn, request.member_keys, carrier)
        full = next(candidates.iter_allocation_requests(conn, request, rule),
                    None)
        seen = {row.id: claim_candidates.Seen(row.uuid, row.generation)
                for row in conn.execute(sa.select(
                    pm.ResourceProvider.id, pm.ResourceProvider.uuid,
                    pm.ResourceProvider.generation))}
        for first_page in trees:
            found = claim_candidates.first(conn, request, rule,
                                           trees=first_page)
            assert found == (None if full is None else (full, {
                provider_id: seen[provider_id]
                for provider_id in full.allocations})), first_page
    return full


def take(candidate, consumer_id):
    """Allocate ``candidate`` as a claim would."""
    with db_api.get_engine().begin() as conn:
        _insert(conn, pm.DeviceAllocation, [
            dict(resource_provider_id=provider_id, consumer_id=consumer_id,
                 resource_class=rc, used=amount)
            for provider_id, resources in candidate.allocations.items()
            for rc, amount in resources.items()])


def test_claims_in_as_many_statements_for_50_and_500_devices(
        sqlite_db, ctx):
    assert statements_of_claims(ctx) == CLAIM_STATEMENTS


#: The consumer, the pool rule, the page with the sharing providers, the
#: aggregates of its devices (no pending lease is on them: no peak to
#: read), the generations moved on where unchanged (the providers' locks),
#: the allocation: the same on every backend, nothing locked before or
#: read again.
CLAIM_STATEMENTS = [
    'INSERT device_consumers',
    'SELECT aggregate_metadata placement_aggregates',
    'SELECT device_allocations lease_allocations provider_aggregates'
    ' provider_inventories provider_traits resource_providers',
    'SELECT placement_aggregates provider_aggregates',
    'UPDATE resource_providers', 'INSERT device_allocations']


def statements_of_claims(ctx):
    """The shapes of the statements of a claim of one FPGA by
    ``member_of`` among 50 devices, the same as among 500 (asserted)."""
    request = request_mod.from_params({'resources': 'FPGA:1',
                                       'member_of': AGGREGATES[1]})
    shapes = []
    for count in (50, 500):
        fixtures.clear_tables()
        build(devices(count), pool=True)
        allocations.claim(ctx, 'warm-%d' % count, 'p', request)
        with fixtures.statements_sent() as sent:
            got = allocations.claim(ctx, 'vm-%d' % count, 'p', request)
        # The second device of the second node (in AGGREGATES[1]): its
        # first is taken, the warm-up claim took the second.
        assert list(got) == [str(uuid.UUID(int=15))]
        shapes.append([_shape(statement) for statement in sent
                       if statement.split()[0] not in (
                           'BEGIN', 'COMMIT', 'ROLLBACK')])
    assert shapes[0] == shapes[1]
    return shapes[0]


def _shape(statement):
    """``VERB table`` of a statement; of a SELECT, every table it reads
    (its subqueries' too), and how it locks."""
    words = statement.split()
    if words[0] == 'INSERT':
        return 'INSERT ' + words[2]
    if words[0] == 'UPDATE':
        return 'UPDATE ' + words[1]
    tables = sorted(set(re.findall(r'(?:FROM|JOIN) (\w+)', statement)))
    locks = (' FOR UPDATE' if 'FOR UPDATE' in statement else
             ' FOR SHARE' if re.search('FOR SHARE|LOCK IN SHARE MODE',
                                       statement) else '')
    return 'SELECT ' + ' '.join(tables) + locks


@pytest.mark.parametrize('params', [
    {'resources': 'FPGA:1'},
    {'resources': 'FPGA:1', 'member_of': 'aggA'},
    {'resources': 'FPGA:1', 'member_of': '!aggA'},
    {'resources': 'FPGA:1', 'member_of': '!aggC'},
    {'resources': 'FPGA:1', 'member_of': 'in:aggA,aggB'},
    {'resources': 'FPGA:1', 'member_of': ['in:aggA,aggB', 'aggC']},
    {'resources1': 'FPGA:1', 'member_of1': 'aggC'},
    {'resources1': 'FPGA:1', 'member_of1': '!aggA'},
    {'resources1': 'FPGA:4', 'resources2': 'FPGA:5',
     'group_policy': 'isolate'},
    {'resources1': 'FPGA:8', 'resources2': 'FPGA:8', 'resources3': 'FPGA:8',
     'group_policy': 'isolate', 'member_of3': 'aggB'},
    {'resources': 'FPGA:2', 'resources1': 'FPGA:7', 'group_policy': 'none'},
])
def test_the_seed_tree_forms(seed, params):
    params = dict(params)
    for key, values in params.items():
        if key.startswith('member_of'):
            params[key] = [
                value.replace('aggA', seed.agg['aggA'])
                .replace('aggB', seed.agg['aggB'])
                .replace('aggC', seed.agg['aggC'])
                for value in ([values] if isinstance(values, str)
                              else values)]
    check_first(seed.ctx, request_mod.from_params(params))


#: The first page, with the sharing providers; a following page.
FIRST_PAGE = ('SELECT device_allocations lease_allocations'
              ' provider_inventories provider_traits resource_providers')
PAGE = ('SELECT device_allocations lease_allocations provider_inventories'
        ' resource_providers')


def _first_fpga(ctx):
    """The allocations of the first candidate for FPGA:1 (checked against
    the full search) and the shapes of the statements that found it."""
    request = request_mod.from_params({'resources': 'FPGA:1'})
    check_first(ctx, request)
    with db_api.reader_connection(ctx) as conn:
        with fixtures.statements_sent() as sent:
            chosen, _seen = claim_candidates.first(
                conn, request, pools.PoolRule())
    return chosen.allocations, [_shape(statement) for statement in sent]


def test_pages_grow_until_one_holds_a_candidate(sqlite_db, ctx):
    # Trees 1 to 5 have room by the SQL's conditions, but their step size
    # refuses FPGA:1; tree 6 fits: pages of 1, 2 and 4 trees. No pending
    # lease is on any device: no peak read.
    refused = {'FPGA': {'total': 4, 'step_size': 2}}
    build([{'inventory': refused}] * 5 + [{'inventory': {'FPGA': {
        'total': 1}}}])
    assert _first_fpga(ctx) == ({6: {'FPGA': 1}}, [FIRST_PAGE, PAGE, PAGE])


def test_a_pages_peaks_are_read_where_a_lease_is_pending(sqlite_db, ctx):
    # Tree 1's device is promised to a pending lease: its peak is read,
    # and keeps the claim off it; tree 2's has no pending lease.
    build([{'inventory': {'FPGA': {'total': 1}}, 'pending': {'FPGA': 1}},
           {'inventory': {'FPGA': {'total': 1}}}])
    assert _first_fpga(ctx) == ({2: {'FPGA': 1}}, [
        FIRST_PAGE, 'SELECT lease_allocations', PAGE])


def test_a_sharing_provider_serves_an_earlier_tree(sqlite_db, ctx):
    # Tree 1 has FPGA but no disk; the sharing provider (id 4) shares
    # aggregate 0 with it and comes last: its candidate is tree 1's, the
    # first anchor, although the page holds no row of tree 1 with disk.
    build([{'aggs': [0], 'inventory': {'FPGA': {'total': 1}}},
           {'inventory': {'FPGA': {'total': 1}, 'DISK_GB': {'total': 9}}},
           {'parent': 1},
           {'aggs': [0], 'sharing': True,
            'inventory': {'DISK_GB': {'total': 100}}}])
    for resources in ('FPGA:1,DISK_GB:5', 'DISK_GB:50'):
        check_first(ctx, request_mod.from_params({'resources': resources}))


def test_a_sharing_provider_waits_for_the_page_of_its_trees(
        sqlite_db, ctx):
    # The first page holds tree 1, where the step size refuses FPGA:1;
    # the sharing provider 4 serves tree 2 too, but after device 3, which
    # the next page brings.
    build([{'inventory': {'FPGA': {'total': 4, 'step_size': 2}}},
           {'aggs': [0]},
           {'parent': 1, 'inventory': {'FPGA': {'total': 1}}},
           {'aggs': [0], 'sharing': True,
            'inventory': {'FPGA': {'total': 1}}}])
    request = request_mod.from_params({'resources': 'FPGA:1'})
    check_first(ctx, request)
    with db_api.reader_connection(ctx) as conn:
        chosen, _seen = claim_candidates.first(
            conn, request, pools.PoolRule())
    assert chosen.allocations == {3: {'FPGA': 1}}


def test_a_pool_on_the_root_holds_its_devices(sqlite_db, ctx):
    build([{'inventory': {'FPGA': {'total': 1}}},
           {'aggs': [2]},
           {'parent': 1, 'inventory': {'FPGA': {'total': 1}}}], pool=True)
    for params in ({'resources': 'FPGA:1'},
                   {'resources': 'FPGA:1', 'member_key': POOL_KEY},
                   {'resources1': 'FPGA:1', 'member_key': POOL_KEY}):
        check_first(ctx, request_mod.from_params(params))


@st.composite
def _inventories(draw):
    inventory = {}
    for rc in draw(st.sets(st.sampled_from(CLASSES), max_size=2)):
        inventory[rc] = {
            'total': draw(st.integers(1, 8)),
            'reserved': draw(st.sampled_from([0, 0, 0, 1])),
            'min_unit': draw(st.sampled_from([1, 1, 1, 2])),
            'max_unit': draw(st.sampled_from([8, 8, 8, 2])),
            'step_size': draw(st.sampled_from([1, 1, 1, 2])),
            'allocation_ratio': draw(st.sampled_from([1.0, 1.0, 1.5])),
        }
    return inventory


@st.composite
def _clouds(draw):
    """Up to 12 providers, each a root (mostly in an aggregate) or the
    child of an earlier one (seldom in one), some sharing, some of their
    room taken or promised to leases."""
    specs = []
    for index in range(draw(st.integers(1, 12))):
        parent = draw(st.sampled_from([None, index - 1, index - 1])
                      | st.integers(0, index - 1)) if index else None
        inventory = draw(_inventories())
        specs.append({
            'parent': parent,
            'aggs': draw(st.lists(st.integers(0, len(AGGREGATES) - 1),
                                  max_size=2 if parent is None else 1)
                         if parent is None or draw(st.integers(0, 3)) == 0
                         else st.just([])),
            'inventory': inventory,
            'used': {rc: draw(st.sampled_from([0, 0, 0, 1, 2, 8]))
                     for rc in inventory},
            'pending': {rc: draw(st.sampled_from([0, 0, 1, 8]))
                        for rc in inventory},
            'sharing': draw(st.sampled_from([False, False, True])),
        })
    return specs


def _member_of(draw, suffix):
    values = []
    for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
        aggs = draw(st.sets(st.sampled_from(AGGREGATES), min_size=1,
                            max_size=2))
        prefix = draw(st.sampled_from(['in:', 'in:', '!in:']))
        values.append(prefix + ','.join(sorted(aggs)))
    return {'member_of' + suffix: values} if values else {}


@st.composite
def _requests(draw):
    """Requests of every form: the unnumbered group, numbered ones,
    member_of, group_policy, a pool's key."""
    params = {}
    suffixes = draw(st.lists(st.sampled_from(['', '', '1', '2', '3']),
                             min_size=1, max_size=3, unique=True))
    for suffix in suffixes:
        classes = draw(st.sampled_from([('FPGA',)] * 2 + [
            ('DISK_GB',), CLASSES]))
        resources = {rc: draw(st.sampled_from([1, 1, 1, 2, 3]))
                     for rc in classes}
        params['resources' + suffix] = ','.join(
            '%s:%d' % item for item in sorted(resources.items()))
        params.update(_member_of(draw, suffix))
    if len([suffix for suffix in suffixes if suffix]) > 1 or draw(
            st.booleans()):
        params['group_policy'] = draw(st.sampled_from(['none', 'isolate']))
    if draw(st.sampled_from([False, False, True])):
        params['member_key'] = POOL_KEY
    return request_mod.from_params(params)


@hypothesis.settings(max_examples=120, deadline=None, suppress_health_check=[
    hypothesis.HealthCheck.function_scoped_fixture,
    hypothesis.HealthCheck.too_slow])
@hypothesis.given(cloud=_clouds(), request=_requests(), pool=st.booleans())
def test_the_first_candidate_is_the_full_searchs(sqlite_db, ctx, cloud,
                                                 request, pool):
    # Each claim taken, the next one goes deeper into the order.
    fixtures.clear_tables()
    build(cloud, pool=pool)
    for claim in range(4):
        chosen = check_first(ctx, request, trees=(1, 2, 5))
        if chosen is None:
            break
        take(chosen, 'claim-%d' % claim)
