"""Reserves and ends of several resources at once (an attach of an FPGA
and a GPU together, the end of a batch) under the flat model.

What they send is pinned for 1, 2 and 4 resources: on PostgreSQL and
MariaDB one statement each, whatever the number of resources; on SQLite
one transaction whose statements each serve every resource (a reserve: the
UPDATEs, then the INSERTs; a commit: the end of the reservations, the
counts, what the consumers hold). The statements of several resources
lock the usage rows in resource order (the lock order of
cyquota.quota.ledger), and whatever they cannot do (drift, a consumer
holding less than a detach gives back) the steps decide, as for one
resource. Run again on each server by tests/functional.
"""

import re

import pytest
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota import exception
from cyquota.quota.ledger import one_statement
from cyquota.quota import QUOTAS
from tests.unit.test_engine import clock, counts, rows  # noqa: F401,H301
from tests.unit import test_ledger_statements as pinned

RESOURCES = ('FPGA', 'GPU', 'PGPU', 'VGPU')
_SIZES = pytest.mark.parametrize('size', [1, 2, 4])


@pytest.fixture
def db(sqlite_db, clock):  # noqa: F811 (the fixture imported above)
    return clock


@pytest.fixture(autouse=True)
def _four_resources():
    CONF.set_override('resources', ['PGPU', 'VGPU'], 'quota')


def _deltas(size, delta=1):
    return {resource: delta for resource in RESOURCES[:size]}


def _all_counts(ctx, size, project='p1'):
    return [counts(ctx, project, resource) for resource in RESOURCES[:size]]


def _held():
    """(resource, used) of every consumer row, in resource order."""
    return sorted((row['resource'], row['used'])
                  for row in rows('consumer_usages'))


def _sent(statements):
    """How many statements a backend sends for each operation, whatever
    the number of resources."""
    if pinned._one_statement() is not None:
        return 1
    ending = len(pinned._ending())
    return dict(reserve=2, reserve_request=3, commit=ending + 2,
                rollback=ending + 1)[statements]


@_SIZES
def test_a_reserve_of_any_size_sends_the_same_statements(db, ctx, size):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', _deltas(size)))
    with pinned.statements() as plain:
        QUOTAS.reserve(ctx, 'p1', _deltas(size))
    with pinned.statements() as retried:
        QUOTAS.reserve(ctx, 'p1', _deltas(size), request_id='attach-1')
    assert plain == pinned._reserving()
    assert len(plain) == _sent('reserve')
    assert retried == pinned._reserving(request_id=True)
    assert len(retried) == _sent('reserve_request')
    assert _all_counts(ctx, size) == [(1, 2)] * size


@_SIZES
def test_a_commit_of_any_size_sends_the_same_statements(db, ctx, size):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', _deltas(size),
                                            consumer_id='vm'))
    uuids = QUOTAS.reserve(ctx, 'p1', _deltas(size, 2), consumer_id='vm')
    with pinned.statements() as commit:
        assert QUOTAS.commit(ctx, 'p1', uuids) is None
    assert commit == pinned._committing()
    assert len(commit) == _sent('commit')
    assert _all_counts(ctx, size) == [(3, 0)] * size
    assert sorted((r['resource'], r['consumer_id'], r['used'])
                  for r in rows('consumer_usages')) == [
        (resource, 'vm', 3) for resource in sorted(RESOURCES[:size])]


@_SIZES
def test_a_rollback_of_any_size_sends_the_same_statements(db, ctx, size):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', _deltas(size)))
    uuids = QUOTAS.reserve(ctx, 'p1', _deltas(size, 2))
    with pinned.statements() as rollback:
        QUOTAS.rollback(ctx, 'p1', uuids)
    assert rollback == pinned._rolling_back()
    assert len(rollback) == _sent('rollback')
    assert _all_counts(ctx, size) == [(1, 0)] * size
    assert {r['status'] for r in rows('reservations')
            if r['uuid'] in uuids} == {'rolled_back'}


def test_a_detach_of_several_resources_is_one_commit(db, ctx):
    # Cinder's detach: reserve -1 of each, then commit them together.
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', _deltas(2, 2),
                                            consumer_id='vm'))
    uuids = QUOTAS.reserve(ctx, 'p1', _deltas(2, -1), consumer_id='vm')
    with pinned.statements() as commit:
        QUOTAS.commit(ctx, 'p1', uuids)
    assert commit == pinned._committing(taken=True)
    assert len(commit) == _sent('commit')
    assert _all_counts(ctx, 2) == [(1, 0)] * 2
    assert _held() == [('FPGA', 1), ('GPU', 1)]


def test_a_batch_of_resources_and_consumers_both_ways_is_one_commit(db, ctx):
    # Two attaches (one of them of two resources) and a detach, committed
    # in one call, uuids in no particular order.
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'GPU': 2},
                                            consumer_id='old'))
    attach = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1},
                            consumer_id='vm-1')
    other = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm-2')
    detach = QUOTAS.reserve(ctx, 'p1', {'GPU': -1}, consumer_id='old')
    with pinned.statements() as commit:
        QUOTAS.commit(ctx, 'p1', detach + other + attach[::-1])
    # MariaDB's one statement serves reservations each of a resource of
    # its own, or all of one resource; a mix like this one the steps end.
    if pinned._one_statement() == 'WITH':
        assert len(commit) == 1
    assert [counts(ctx, resource=r) for r in ('FPGA', 'GPU')] == [
        (3, 0), (2, 0)]
    assert sorted((r['resource'], r['consumer_id'], r['used'])
                  for r in rows('consumer_usages')) == [
        ('FPGA', 'vm-1', 2), ('FPGA', 'vm-2', 1), ('GPU', 'old', 1),
        ('GPU', 'vm-1', 1)]


def test_drift_in_one_resource_of_several_is_told_by_the_steps(db, ctx):
    # The usage row of the second resource holds less reserved than its
    # reservation: nothing the one statement (or SQLite's batch) wrote
    # stays, and the steps commit all, recording the drift of that one.
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 3},
                           consumer_id='vm')
    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql("UPDATE quota_usages SET reserved = 1"
                             " WHERE project_id = 'p1' AND resource = 'GPU'")
    QUOTAS.commit(ctx, 'p1', uuids)
    assert [counts(ctx, resource=r) for r in ('FPGA', 'GPU')] == [
        (2, 0), (3, 0)]
    assert {r['status'] for r in rows('reservations')} == {'committed'}
    assert [(d['resource'], d['kind'], d['requested'], d['applied'])
            for d in rows('drift_events')] == [
        ('GPU', 'reserved_below_zero', 3, 1)]
    assert _held() == [('FPGA', 2), ('GPU', 3)]


def test_a_detach_of_several_giving_back_more_than_one_holds(db, ctx):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', _deltas(2, 2),
                                            consumer_id='vm'))
    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql("UPDATE consumer_usages SET used = 0"
                             " WHERE resource = 'GPU'")
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', _deltas(2, -1),
                                            consumer_id='vm'))
    assert _all_counts(ctx, 2) == [(1, 0)] * 2
    assert _held() == [('FPGA', 1), ('GPU', 0)]
    assert [(d['resource'], d['kind'], d['requested'], d['applied'])
            for d in rows('drift_events')] == [
        ('GPU', 'consumer_release_below_zero', 1, 0)]


def test_a_reserve_of_several_over_quota_in_its_last_resource(db, ctx):
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'VGPU', 1)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', _deltas(4)))
    with pytest.raises(exception.OverQuota) as raised:
        QUOTAS.reserve(ctx, 'p1', _deltas(4))
    assert [o['resource'] for o in raised.value.overs] == ['VGPU']
    assert _all_counts(ctx, 4) == [(1, 0)] * 4
    assert len(rows('reservations')) == 4


# -- the statements' texts, for each server ----------------------------------

def _text(statement):
    return statement.prepared.text


@pytest.mark.parametrize('size', [2, 4])
def test_postgresql_locks_the_usage_rows_of_several_in_resource_order(size):
    # One UPDATE of several rows locks them in the order of its plan; the
    # rows are locked first, in resource order, by a locking SELECT.
    dialect = postgresql.psycopg.dialect()
    locking = 'ORDER BY quota_usages.resource FOR UPDATE OF quota_usages'
    reserve = _text(one_statement.reserve(
        dialect, QUOTAS.ledger.reserve._limit, size, True))
    assert reserve.count(locking) == 1
    assert reserve.count('UPDATE quota_usages') == 1
    assert reserve.count('INSERT INTO reservations') == 1
    for target in ('committed', 'rolled_back'):
        end = _text(one_statement.end(target, size, dialect))
        assert end.count(locking) == 1
        assert end.index('UPDATE reservations') < end.index(locking)
        assert end.index(locking) < end.index('UPDATE quota_usages')


@pytest.mark.parametrize('size', [2, 4])
def test_mariadb_changes_the_usage_rows_of_several_in_resource_order(size):
    # Several usage rows in one UPDATE through their unique index, in
    # resource order; one row (an end of reservations all of one
    # resource) by its key.
    dialect = mysql.pymysql.dialect(paramstyle='pyformat')
    dialect.is_mariadb = True
    several = re.compile(
        r'^UPDATE quota_usages FORCE INDEX \(uniq_quota_usages0project_id0'
        r'resource\) .* ORDER BY (quota_usages\.)?resource;$')
    statements = {target: _text(one_statement.end(target, size, dialect))
                  for target in ('committed', 'rolled_back')}
    statements['reserve'] = _text(one_statement.reserve(
        dialect, QUOTAS.ledger.reserve._limit, size, True))
    for name, text in statements.items():
        updates = [line for line in text.splitlines()
                   if line.startswith('UPDATE quota_usages')]
        assert several.match(updates[0]), (name, updates[0])
        assert [u for u in updates[1:] if 'AND resource = r_0 ' not in u
                ] == [], name
        if name != 'reserve':
            assert text.index('UPDATE reservations') < text.index(updates[0])
