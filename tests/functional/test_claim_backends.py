"""Device claims on PostgreSQL and MariaDB: as many statements for 50 as
for 500 devices, the same first candidate as the full search, and a claim
that loses the race for its devices retried (where, unlike SQLite, the
search reads without holding the database)."""

import uuid

from oslo_db import exception as db_exc
import pytest

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.placement import allocations
from cyquota.placement import candidates
from cyquota.placement import claim_candidates
from cyquota.placement import device_errors
from cyquota.placement import providers
from cyquota.placement import request
from tests.unit.placement import conftest
from tests.unit.placement.test_allocations import devices  # noqa: F401
from tests.unit.placement import test_claim_candidates as claims


@pytest.fixture
def tree(backend, ctx):
    """An empty provider tree on the server."""
    return conftest.Tree(ctx)


def test_claims_in_as_many_statements_for_50_and_500_devices(backend, ctx):
    # As on SQLite: the generations stand in for reading again.
    assert claims.statements_of_claims(ctx) == claims.CLAIM_STATEMENTS


def _scans_of_providers(conn):
    """How many full scans of resource_providers this transaction
    (PostgreSQL) or session (MariaDB) has made."""
    if conn.dialect.name == 'postgresql':
        return conn.exec_driver_sql(
            "SELECT seq_scan FROM pg_stat_xact_user_tables "
            "WHERE relname = 'resource_providers'").scalar()
    # Rows read in table order; a lookup by key counts none.
    return int(conn.exec_driver_sql(
        "SHOW SESSION STATUS LIKE 'Handler_read_rnd_next'").one()[1])


def test_a_claims_generation_update_reads_by_key(backend, ctx):
    # A scan would also lock (or, on MariaDB, read through) every
    # provider of the cloud at each claim.
    claims.build(claims.devices(300))
    # This table only: statistics of other, empty tables would stay for
    # the tests that follow on this database.
    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql('ANALYZE TABLE resource_providers'
                             if backend == 'mysql'
                             else 'ANALYZE resource_providers')
    dev = providers.get(ctx, str(uuid.UUID(int=7)))
    with db_api.writer_connection(ctx) as conn:
        before = _scans_of_providers(conn)
        assert providers.bump_if_unchanged(conn, {dev.id: dev.generation})
        assert not providers.bump_if_unchanged(conn, {dev.id: dev.generation})
        assert _scans_of_providers(conn) == before


def test_the_first_candidate_is_the_full_searchs(backend, ctx):
    claims.build(claims.devices(30, per_node=3), pool=True)
    taken = 0
    for params in ({'resources': 'FPGA:1'},
                   {'resources': 'FPGA:1', 'member_of': claims.AGGREGATES[1]},
                   {'resources': 'FPGA:1',
                    'member_of': '!' + claims.AGGREGATES[0]},
                   {'resources1': 'FPGA:1', 'resources2': 'FPGA:1',
                    'group_policy': 'isolate'},
                   {'resources': 'FPGA:1', 'member_key': claims.POOL_KEY},
                   # A key no pool holds: no device.
                   {'resources': 'FPGA:1', 'member_key': 'reservation:x'}):
        for _ in range(3):
            chosen = claims.check_first(ctx, request.from_params(params))
            if chosen is not None:
                claims.take(chosen, 'taken-%d' % taken)
                taken += 1
    assert taken > 5


def _stale_search(devices, monkeypatch):  # noqa: F811
    """Make the search offer dev1 although it is full: what a search that
    ran just before a concurrent claim committed would see (dev1 at its
    generation before that claim)."""
    before = providers.get(devices.ctx, devices.rp['dev1'])
    allocations.claim(devices.ctx, 'vm-0', 'p',
                      request.from_params({'resources1': 'FPGA:1'}))
    stale = candidates.AllocationRequest({before.id: {'FPGA': 1}},
                                         {'': [before.id]})
    seen = claim_candidates.Seen(before.uuid, before.generation)
    monkeypatch.setattr(claim_candidates, 'first',
                        lambda *args: (stale, {before.id: seen}))


def test_a_lost_race_retries_the_callers_transaction(
        devices, monkeypatch):  # noqa: F811
    _stale_search(devices, monkeypatch)
    one = request.from_params({'resources': 'FPGA:1'})
    with pytest.raises(allocations.AllocationRaced) as caught:
        with db_api.writer(devices.ctx):
            allocations.claim(devices.ctx, 'vm-1', 'p', one)
    assert isinstance(caught.value, db_exc.DBDeadlock)
    assert allocations.usages(devices.ctx, devices.rp['dev1'])[1] == {
        'FPGA': 1}


def test_a_claim_alone_retries_then_gives_up(
        devices, monkeypatch):  # noqa: F811
    _stale_search(devices, monkeypatch)
    CONF.set_override('db_max_retries', 2, 'quota')
    with pytest.raises(device_errors.NoValidAllocation) as caught:
        allocations.claim(devices.ctx, 'vm-1', 'p',
                          request.from_params({'resources': 'FPGA:1'}))
    assert 'concurrent claims' in caught.value.message
    assert allocations.get_for_consumer(devices.ctx, 'vm-1')[
        'project_id'] is None
