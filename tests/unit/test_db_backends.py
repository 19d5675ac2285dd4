"""The backends (``cyquota.db.backends``): which one serves a database,
what the plain steps (``portable.Portable``) are on each server, and the
seam that runs them there (``of`` replaced by ``step_by_step``), which
the ledger's model test uses on every server."""

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects.mssql import pyodbc
from sqlalchemy.dialects.mysql import pymysql
from sqlalchemy.dialects.postgresql import psycopg
from sqlalchemy.dialects.sqlite import pysqlite
from sqlalchemy import orm

from cyquota.db import backends
from cyquota.quota.ledger import statements as sql
from cyquota.quota import QUOTAS
from tests.unit.test_engine import clock, counts, rows  # noqa: F401,H301
from tests.unit import test_ledger_statements as pinned

_DIALECTS = {'postgresql': psycopg.dialect, 'mariadb': pymysql.dialect,
             'sqlite': pysqlite.dialect}
_SERVERS = pytest.mark.parametrize('server', sorted(_DIALECTS))


@pytest.fixture
def db(sqlite_db, clock):  # noqa: F811 (the fixture imported above)
    return clock


@_SERVERS
def test_each_server_has_its_backend(server):
    assert backends.of(_DIALECTS[server]()).name == server


def test_another_server_runs_the_plain_steps():
    assert backends.of(pyodbc.dialect()) is backends.PORTABLE
    assert backends.step_by_step(pyodbc.dialect()) is backends.PORTABLE


def test_an_engine_a_connection_and_a_session_name_their_backend():
    engine = sa.create_engine('sqlite://')
    with engine.connect() as conn, orm.Session(engine) as session:
        assert {backends.of(bind) for bind in (engine, conn, session)} == {
            backends.of(engine.dialect)}


def _select():
    return sa.select(sql.RESERVATIONS.c.id)


@_SERVERS
def test_the_plain_steps_keep_the_spelling_and_no_fast_path(server):
    dialect = _DIALECTS[server]()
    plain, fast = backends.step_by_step(dialect), backends.of(dialect)
    assert plain.spelling is fast.spelling
    assert plain is backends.step_by_step(dialect)
    select = _select()
    assert not (plain.prepares(dialect) or plain.counts_batch_rows(dialect)
                or plain.returns_from_update(dialect))
    assert plain.insert_adding(sql.CONSUMERS, ('project_id',), 'used',
                               {}) is None
    assert plain.through_index(select, sql.RESERVATIONS, 'i') is select
    assert plain.as_written(select) is select


def test_only_mariadb_is_told_its_plans():
    dialect = pymysql.dialect()
    hinted = backends.of(dialect).as_written(backends.of(
        dialect).through_index(_select(), sql.RESERVATIONS, 'PRIMARY'))
    assert str(hinted.compile(dialect=dialect)).startswith(
        'SELECT STRAIGHT_JOIN reservations.id \nFROM reservations '
        'FORCE INDEX (PRIMARY)')
    for server in ('postgresql', 'sqlite'):
        backend = backends.of(_DIALECTS[server]())
        assert backend.through_index(_select(), sql.RESERVATIONS,
                                     'PRIMARY').compare(_select())


def test_the_plain_steps_keep_the_books(db, ctx, monkeypatch):
    # Run again on each server by tests/functional/test_ledger_backends.py.
    monkeypatch.setattr(backends, 'of', backends.step_by_step)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1,
                                                        'GPU': 1}))
    with pinned.statements() as reserve:
        uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1},
                               consumer_id='vm')
    # A resource a statement, no batch.
    assert reserve == ['UPDATE quota_usages'] * 2 + ['INSERT reservations']
    with pinned.statements() as commit:
        QUOTAS.commit(ctx, 'p1', uuids)
    # Locked and read, then updated; each consumer's row added to, else
    # inserted.
    assert commit == [
        pinned._locking_select('reservations'), 'UPDATE reservations',
        *['UPDATE quota_usages'] * 2,
        *['UPDATE consumer_usages', 'INSERT consumer_usages'] * 2]
    assert counts(ctx) == (3, 0) and counts(ctx, resource='GPU') == (2, 0)
    assert sorted((row['resource'], row['consumer_id'], row['used'])
                  for row in rows('consumer_usages')) == [
        ('FPGA', '', 1), ('FPGA', 'vm', 2), ('GPU', '', 1), ('GPU', 'vm', 1)]
