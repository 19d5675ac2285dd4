"""The dicts of binds the ledger builds (cyquota.quota.ledger.binds) hold
exactly the binds of their statements, as each server's dialect compiles
them (no server needed): a bind renamed in one place fails here, for
every backend, rather than at run time on one."""

import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cyquota.db import models
from cyquota.placement import claim_steps
from cyquota.quota.ledger import binds
from cyquota.quota.ledger import consumers
from cyquota.quota.ledger import one_statement
from cyquota.quota.ledger import settle
from cyquota.quota.ledger import statements as sql
from cyquota.quota import QUOTAS

_NOW = datetime.datetime(2030, 1, 1)
_SHARED = sql.Reserve('p1', 'r-1', _NOW, _NOW, models.RESERVED, 'vm',
                      False, _NOW, -1)
_RESOURCES = [sql.Resource('R%d' % index, 1, 5, 'u-%d' % index)
              for index in range(4)]
_ENDS = sql.End('p1', ['u-0', 'u-1', 'u-2', 'u-3'], models.COMMITTED,
                _NOW, _NOW)


def _mariadb():
    dialect = mysql.pymysql.dialect(paramstyle='pyformat')
    dialect.is_mariadb = True
    return dialect


_DIALECTS = {'sqlite': sqlite.pysqlite.dialect,
             'postgresql': postgresql.psycopg.dialect,
             'mariadb': _mariadb}
_SERVERS = pytest.mark.parametrize('server', ['postgresql', 'mariadb'])
_COUNTS = pytest.mark.parametrize('count', [1, 2, 4])


def _limits():
    """The limit as the statement reads it (the flat model's, of the
    limits in cyquota's database) and as the caller binds it (Keystone's
    limits)."""
    return [QUOTAS.ledger.reserve._limit, sa.bindparam('_limit')]


def _sent(statement):
    """The binds a one statement is sent with, its literals aside (what
    ``prepared.Prepared.run`` takes from the caller's dict)."""
    prepared = statement.prepared
    return set(prepared._binds) - set(prepared._literals)


def _taken(statement, dialect):
    """The binds ``statement`` takes from its caller, as ``dialect``
    compiles it."""
    return {name for name, bind
            in statement.compile(dialect=dialect).binds.items()
            if not bind.unique}


@_SERVERS
@_COUNTS
@pytest.mark.parametrize('request_id', [False, True])
def test_a_one_statement_reserve_is_sent_its_binds(server, count,
                                                   request_id):
    for limit in _limits():
        statement = one_statement.reserve(_DIALECTS[server](), limit, count,
                                          request_id)
        params = statement.binds(_SHARED, *_RESOURCES[:count])
        assert set(params) == _sent(statement), (server, limit)


@_SERVERS
@pytest.mark.parametrize('request_id', [False, True])
def test_a_one_statement_reserve_that_claims_is_sent_its_binds(server,
                                                               request_id):
    claiming = _SHARED._replace(devices=True, user_id='u1',
                                device_class='FPGA', device_amount=1)
    for limit in _limits():
        statement = one_statement.claiming_reserve(
            _DIALECTS[server](), limit, request_id, claim_steps)
        params = statement.binds(claiming, _RESOURCES[0])
        assert set(params) == _sent(statement), (server, limit)
        assert {'_device_class', '_device_amount', '_user_id'} <= set(params)


@_SERVERS
@_COUNTS
@pytest.mark.parametrize('target', [models.COMMITTED, models.ROLLED_BACK])
def test_a_one_statement_end_is_sent_its_binds(server, count, target):
    statement = one_statement.end(target, count, _DIALECTS[server]())
    params = statement.binds(_ENDS, *map(sql.Ended, _ENDS.uuids[:count]))
    assert set(params) == _sent(statement)
    assert {params[binds.bind_name('uuid', index)]
            for index in range(count)} == set(_ENDS.uuids[:count])


@pytest.mark.parametrize('server', sorted(_DIALECTS))
def test_each_step_is_given_its_binds(server):
    dialect = _DIALECTS[server]()
    change = sql.Change([1, 2], models.EXPIRED, _NOW)
    steps = [
        (sql.FIND_RESERVATIONS, settle._FINDING, _ENDS),
        (sql.LOCK_RESERVATIONS, settle._LOCKING, _ENDS),
        (sql.SET_STATUS, settle._CHANGING, change),
        (sql.LOCK_RESERVED_BY_ID, settle._LOCKING_BY_ID, change),
        (sql.END_RESERVED, settle._MOVING,
         sql.Move('p1', 'FPGA', 2, -1, 1, _NOW)),
        (sql.DUE_RESERVATIONS, settle._DUE, sql.Due('p1', _NOW, 10)),
        (sql.ADD_TO_CONSUMER, consumers._ADDING,
         sql.ConsumerChange('p1', 'FPGA', 'vm', -1, _NOW)),
    ]
    if dialect.update_returning:
        steps.append((sql.END_RESERVATIONS_RETURNING, settle._ENDING,
                      _ENDS))
    for statement, built, fields in steps:
        assert set(built(fields)) == _taken(statement, dialect), statement
    # A reserve resource by resource: its UPDATE, whether the request id
    # was seen, its INSERT, with one dict.
    reserve = QUOTAS.ledger.reserve
    taken = set().union(*[_taken(statement, dialect) for statement in (
        reserve._statement, sql.REQUEST_SEEN,
        sql.INSERT_RESERVATION_OF_USAGE)])
    assert set(reserve._binds(_SHARED, _RESOURCES[0])) == taken


def test_a_bind_no_field_holds_fails_as_its_statement_is_built():
    renamed = sql.END_RESERVED.where(sql.USAGES.c.reserved
                                     > sa.bindparam('_kept'))
    with pytest.raises(ValueError, match='_kept'):
        binds.Binds(binds.names_of(renamed), sql.Move)
    # A bind of a resource's field where the fields of each are others.
    with pytest.raises(ValueError, match='_delta_0'):
        binds.Binds({'_delta_0'}, sql.End, sql.Ended)
