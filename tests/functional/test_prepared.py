"""Statements prepared once per connection (cyquota.db.prepared), on the
real servers: by psycopg on PostgreSQL, by name on MariaDB."""

import gc

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.db import prepared
from tests import fixtures

_USAGES = models.QuotaUsage.__table__


both = pytest.mark.parametrize('backend', ['postgresql', 'mysql'],
                               indirect=True)
mariadb = pytest.mark.parametrize('backend', ['mysql'], indirect=True)


@pytest.fixture
def usages(backend):
    with db_api.get_engine().begin() as conn:
        conn.execute(_USAGES.insert(), [
            dict(project_id='p1', resource='FPGA', used=1, reserved=0),
            dict(project_id='p1', resource='GPU', used=2, reserved=0)])


def _sent(conn):
    """The statements sent on ``conn`` meanwhile (a list that fills)."""
    sent = []
    sa.event.listen(conn, 'before_cursor_execute',
                    lambda *args: sent.append(args[2].split()[0]))
    return sent


def _used_over(threshold):
    # A literal (the resource) beside a bind used twice: the literal's
    # value is kept, and MariaDB's positional parameters get the bind's
    # value at each place.
    return (sa.select(_USAGES.c.used)
            .where(_USAGES.c.resource == 'GPU',
                   _USAGES.c.used > sa.bindparam('threshold'),
                   _USAGES.c.used + sa.bindparam('threshold') < 100))


def _prepared_on_server(conn, statement):
    """How many statements named as ``statement`` MariaDB holds for
    ``conn``'s session (it lists none: it runs it, or refuses)."""
    nulls = ['NULL'] * prepared.text(statement.name).count('?')
    try:
        conn.exec_driver_sql('EXECUTE %s USING %s'
                             % (statement.name, ', '.join(nulls)))
    except (db_exc.DBError, sa.exc.DBAPIError):
        return 0
    return 1


def _psycopg_prepared(conn):
    """How many statements of ``_used_over`` psycopg prepared on
    ``conn``'s session."""
    return conn.exec_driver_sql(
        'SELECT count(*) FROM pg_prepared_statements WHERE NOT from_sql'
        ' AND statement LIKE %(text)s',
        dict(text='%quota_usages.used > $%')).scalar()


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_psycopg_prepares_a_statement_a_connection_runs_often(usages):
    """psycopg prepares the text it is sent once a connection has run it
    ``prepare_threshold`` times; cyquota sends no PREPARE of its own."""
    statement = prepared.Prepared.of(_used_over(0),
                                     db_api.get_engine().dialect)
    with db_api.get_engine().connect() as conn:
        sent = _sent(conn)
        threshold = conn.connection.dbapi_connection.prepare_threshold
        for _ in range(threshold + 1):
            assert statement.run(conn, dict(threshold=0)).all() == [(2,)]
        assert statement.run(conn, dict(threshold=5)).all() == []
        assert set(sent) == {'SELECT'}
        assert _psycopg_prepared(conn) == 1


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_psycopg_keeps_its_statements_through_rollbacks(usages):
    """Transactions that roll back (every read's) between the runs of a
    statement neither stop psycopg from preparing it nor make it forget
    it; a rollback still undoes what its transaction wrote, also after an
    error, and the pool's reset rolls back an open transaction."""
    statement = prepared.Prepared.of(_used_over(0),
                                     db_api.get_engine().dialect)
    with db_api.get_engine().connect() as conn:
        threshold = conn.connection.dbapi_connection.prepare_threshold
        for _ in range(threshold + 2):
            assert statement.run(conn, dict(threshold=0)).all() == [(2,)]
            conn.rollback()
        assert _psycopg_prepared(conn) == 1
        conn.execute(_USAGES.update().values(used=7))
        with pytest.raises(db_exc.DBError):
            conn.exec_driver_sql('SELECT 1 / 0')
        conn.rollback()
        assert statement.run(conn, dict(threshold=0)).all() == [(2,)]
        assert _psycopg_prepared(conn) == 1
        conn.execute(_USAGES.update().values(used=8))
        session = conn.connection.dbapi_connection
    # Back in the pool, its open transaction rolled back by the reset.
    with session.cursor() as cursor:
        cursor.execute('SELECT max(used) FROM quota_usages')
        assert cursor.fetchone() == (2,)
        cursor.execute('SELECT count(*) FROM pg_prepared_statements'
                       ' WHERE NOT from_sql AND statement LIKE %s',
                       ['%quota_usages.used > $%'])
        assert cursor.fetchone() == (1,)
    session.rollback()


@both
def test_a_statement_answers_as_sqlalchemy_runs_it(usages):
    statement = prepared.Prepared.of(_used_over(1),
                                     db_api.get_engine().dialect)
    with db_api.get_engine().connect() as conn:
        for threshold in (0, 1, 2, 0, 1, 2, 0):
            assert (statement.run(conn, dict(threshold=threshold)).all()
                    == conn.execute(_used_over(1), dict(
                        threshold=threshold)).all())


@mariadb
def test_prepared_once_per_connection_then_executed(usages):
    statement = prepared.Prepared.of(_used_over(0),
                                     db_api.get_engine().dialect)
    with db_api.get_engine().connect() as conn:
        sent = _sent(conn)
        assert statement.run(conn, dict(threshold=0)).all() == [(2,)]
        assert statement.run(conn, dict(threshold=5)).all() == []
        assert sent == ['PREPARE', 'EXECUTE', 'EXECUTE']
        assert _prepared_on_server(conn, statement) == 1
        conn.rollback()  # a prepared statement outlives the transaction
        assert statement.run(conn, dict(threshold=1)).all() == [(2,)]
        assert sent[-1:] == ['EXECUTE']


@mariadb
def test_a_new_connection_prepares_again(usages):
    statement = prepared.Prepared.of(_used_over(0),
                                     db_api.get_engine().dialect)
    with db_api.get_engine().connect() as conn:
        statement.run(conn, dict(threshold=0)).all()
        conn.invalidate()  # as after a lost connection
        conn.rollback()
        sent = _sent(conn)
        assert _prepared_on_server(conn, statement) == 0
        assert statement.run(conn, dict(threshold=0)).all() == [(2,)]
        assert sent[-2:] == ['PREPARE', 'EXECUTE']


@mariadb
def test_each_statement_its_own_name(usages):
    dialect = db_api.get_engine().dialect
    same = prepared.Prepared.of(_used_over(0), dialect)
    other = prepared.Prepared.of(
        sa.select(_USAGES.c.used).where(
            _USAGES.c.resource == sa.bindparam('resource')), dialect)
    assert same.name == prepared.Prepared.of(_used_over(0), dialect).name
    assert other.name != same.name
    assert prepared.text(same.name) != prepared.text(other.name)
    with db_api.get_engine().connect() as conn:
        assert same.run(conn, dict(threshold=0)).all() == [(2,)]
        assert other.run(conn, dict(resource='FPGA')).all() == [(1,)]


def _distinct(count):
    """``count`` statements of distinct texts, each answering GPU's
    ``used`` (2)."""
    return [_USAGES.c.used.label('used_%d' % number) for number in
            range(count)]


@mariadb
def test_a_connection_keeps_the_statements_it_ran_lately(usages,
                                                         monkeypatch):
    """Past ``PER_CONNECTION``, the statement run least lately is
    deallocated; run again, it is prepared again."""
    monkeypatch.setattr(prepared, 'PER_CONNECTION', 2)
    dialect = db_api.get_engine().dialect
    first, second, third = [
        prepared.Prepared.of(sa.select(column).where(
            _USAGES.c.resource == sa.bindparam('resource')), dialect)
        for column in _distinct(3)]
    with db_api.get_engine().connect() as conn:
        sent = _sent(conn)
        for statement in (first, second, first, third):
            assert statement.run(conn, dict(resource='GPU')).all() == [(2,)]
        assert sent == ['PREPARE', 'EXECUTE', 'PREPARE', 'EXECUTE',
                        'EXECUTE', 'DEALLOCATE', 'PREPARE', 'EXECUTE']
        assert [_prepared_on_server(conn, statement)
                for statement in (first, second, third)] == [1, 0, 1]
        assert second.run(conn, dict(resource='GPU')).all() == [(2,)]
        assert _prepared_on_server(conn, first) == 0


@mariadb
def test_a_statement_no_longer_used_is_forgotten(usages):
    """The name of a statement MariaDB runs by name leads to its text
    while the statement lives, not after."""
    statement = prepared.Prepared.of(_used_over(7),
                                     db_api.get_engine().dialect)
    name = statement.name
    assert '?' in prepared.text(name)
    del statement
    gc.collect()
    assert name not in prepared._BY_NAME


@mariadb
def test_mariadb_refusing_one_more_runs_it_unprepared(usages):
    """Where MariaDB holds ``max_prepared_stmt_count`` statements already
    (every session's), the next runs unprepared, right, and the
    connection goes on without asking again."""
    statement = prepared.Prepared.of(
        sa.select(_distinct(1)[0]).where(
            _USAGES.c.resource == sa.bindparam('resource')),
        db_api.get_engine().dialect)
    with fixtures.mariadb_prepares_no_more(), \
            db_api.get_engine().connect() as conn:
        sent = _sent(conn)
        assert statement.run(conn, dict(resource='GPU')).all() == [(2,)]
        assert statement.run(conn, dict(resource='FPGA')).all() == [(1,)]
        # Refused once, the connection does not ask again.
        assert sent == ['PREPARE', 'SELECT', 'SELECT']
        assert _prepared_on_server(conn, statement) == 0
