"""Device selection on the real PostgreSQL and MariaDB: seed 003's table,
the lease-pool rule and aggregate metadata behave as on SQLite, and a
reserve's devices are freed when it does not commit (the one-statement
rollback leaves such reservations to the steps, which free them)."""

import uuid

import pytest

from cyquota.conf import CONF
from cyquota import context
from cyquota import exception
from cyquota.placement import aggregates
from cyquota.placement import candidates
from cyquota.placement import request
from tests.unit.placement import conftest
from tests.unit.placement.test_ledger_devices import (  # noqa: F401
    devices,  # noqa: H301 (a fixture and a test, run here on each server)
    test_a_reserve_that_does_not_commit_frees_its_devices,
)

ALL = {'cn1', 'numa1_1', 'numa1_2', 'cn2', 'numa2_1', 'numa2_2', 'ss1',
       'ss2'}
TABLE = [
    ('resources', 'member_of', 'aggA', {'cn1', 'numa1_1', 'numa1_2'}),
    ('resources', 'member_of', 'aggB', {'cn2', 'numa2_1', 'numa2_2', 'ss1'}),
    ('resources', 'member_of', 'aggC', {'numa1_1', 'ss2'}),
    ('resources1', 'member_of1', 'aggA', {'cn1'}),
    ('resources1', 'member_of1', 'aggB', {'cn2', 'ss1'}),
    ('resources1', 'member_of1', 'aggC', {'numa1_1', 'ss2'}),
]


def _chosen(tree, params):
    result = candidates.search(tree.ctx, request.from_params(params))
    return {tree.name_of(rp) for areq in result['allocation_requests']
            for rp in areq['allocations']}


@pytest.fixture
def tree(backend, ctx):
    """An empty provider tree on the server (for the device tests run
    here)."""
    return conftest.Tree(ctx)


@pytest.fixture
def seed(backend):
    return conftest.build_seed_tree(
        conftest.Tree(context.get_admin_context()))


def test_forbidden_aggregate_table(seed):
    for resources, member_of, agg, excluded in TABLE:
        params = {resources: 'FPGA:1', member_of: '!' + seed.agg[agg]}
        assert _chosen(seed, params) == ALL - excluded, (member_of, agg)


def test_lease_pools(seed):
    aggregates.put(seed.ctx, seed.agg['aggB'], 'lease r1',
                   {'reservation:r1': 'r1'})
    assert _chosen(seed, {'resources': 'FPGA:1'}) == ALL - {
        'cn2', 'numa2_1', 'numa2_2', 'ss1'}
    assert _chosen(seed, {'resources': 'FPGA:1',
                          'member_key': 'reservation:r1'}) == {
        'cn2', 'numa2_1', 'numa2_2', 'ss1'}


def test_a_prefix_is_not_a_pattern(seed):
    # "_" is a LIKE wildcard: the prefix must still match literally.
    CONF.set_override('default_forbidden_member_prefix', ['reservation_'],
                      'placement')
    try:
        aggregates.put(seed.ctx, seed.agg['aggB'], None,
                       {'reservation:r1': 'r1'})
        aggregates.put(seed.ctx, seed.agg['aggC'], None,
                       {'reservation_x': 'x'})
        assert _chosen(seed, {'resources': 'FPGA:1'}) == ALL - {
            'numa1_1', 'ss2'}
    finally:
        CONF.clear_override('default_forbidden_member_prefix', 'placement')


def test_metadata_keys_differing_in_case(backend):
    ctx = context.get_admin_context()
    agg = str(uuid.uuid4())
    metadata = {'reservation:R1': 'a', 'reservation:r1': 'b'}
    assert aggregates.put(ctx, agg, None, metadata)[1][
        'metadata'] == metadata


def test_metadata_keys_differing_in_trailing_spaces(backend):
    ctx = context.get_admin_context()
    agg = str(uuid.uuid4())
    metadata = {'reservation:r1': 'a', 'reservation:r1 ': 'b'}
    if backend == 'mysql':
        # MySQL's collations, the binary one too, ignore trailing spaces:
        # one key, a clear 400.
        with pytest.raises(exception.InvalidBody):
            aggregates.put(ctx, agg, None, metadata)
    else:
        assert aggregates.put(ctx, agg, None, metadata)[1][
            'metadata'] == metadata


def test_pool_keys_follow_filter_tenant_id_exactly(seed):
    # Neither MySQL's case-insensitive LIKE nor "_" as a wildcard may make
    # another key name a project.
    aggregates.put(seed.ctx, seed.agg['aggB'], 'pool of A', {
        'reservation:r1': 'r1', 'filter_tenant_id': 'A, C',
        'FILTER_TENANT_ID_X': 'B', 'filterXtenantXid': 'B'})
    pool = {'cn2', 'numa2_1', 'numa2_2', 'ss1'}
    params = {'resources': 'FPGA:1', 'member_key': 'reservation:r1'}

    def chosen_for(project):
        ctx = context.RequestContext(project_id=project, roles=['member'])
        result = candidates.search(ctx, request.from_params(params))
        return {seed.name_of(rp) for areq in result['allocation_requests']
                for rp in areq['allocations']}
    assert chosen_for('A') == chosen_for('C') == pool
    assert chosen_for('B') == set()
