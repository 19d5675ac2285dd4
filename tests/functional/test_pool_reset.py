"""A pooled connection comes back without a transaction, and without a
ROLLBACK it does not need (``pool_returns.no_rollback_after_an_end``), on
the real servers; and MariaDB's connections skip the TLS context that its
server does not offer."""

import pytest
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models

_LIMITS = models.RegisteredLimit.__table__


@pytest.fixture
def one_connection(backend):
    """The engine, its pool holding one connection, and a limit row."""
    engine = db_api.get_engine()
    engine.dispose()
    with engine.begin() as conn:
        conn.execute(_LIMITS.insert().values(resource='FPGA',
                                             default_limit=1))
    return engine


def _rollbacks(engine):
    """The ROLLBACKs MariaDB counted on the pooled connection (None on
    PostgreSQL, whose driver sends none on an idle connection)."""
    if engine.dialect.name != 'mysql':
        return None
    with engine.connect() as conn:
        count = int(conn.exec_driver_sql(
            "SHOW SESSION STATUS LIKE 'Com_rollback'").one()[1])
        conn.commit()
    return count


def _limit_settable(engine):
    """Whether another session can change the row at once (not blocked by
    a transaction left open on the pooled connection)."""
    other = sa.create_engine(engine.url, poolclass=sa.pool.NullPool)
    timeout = ('SET lock_timeout = 2000' if engine.dialect.name ==
               'postgresql' else 'SET innodb_lock_wait_timeout = 2')
    try:
        with other.begin() as conn:
            conn.exec_driver_sql(timeout)
            return conn.execute(_LIMITS.update().values(default_limit=2)
                                ).rowcount == 1
    except sa.exc.OperationalError:
        return False
    finally:
        other.dispose()


@pytest.mark.parametrize('backend', ['postgresql', 'mysql'], indirect=True)
def test_a_committed_transaction_comes_back_without_a_rollback(
        one_connection, ctx):
    engine = one_connection
    before = _rollbacks(engine)
    with db_api.writer_connection(ctx) as conn:
        conn.execute(_LIMITS.update().values(default_limit=3))
    after = _rollbacks(engine)
    assert after == before  # the pool's own ROLLBACK is not sent
    with db_api.reader_connection(ctx) as conn:
        assert conn.execute(sa.select(_LIMITS.c.default_limit)
                            ).scalar() == 3
    if before is not None:
        # A read ends with oslo.db's ROLLBACK, and only that one.
        assert _rollbacks(engine) == after + 1


@pytest.mark.parametrize('backend', ['postgresql', 'mysql'], indirect=True)
def test_a_transaction_left_open_is_rolled_back_on_return(
        one_connection, ctx):
    engine = one_connection
    with db_api.writer_connection(ctx) as conn:  # marks the connection
        conn.execute(_LIMITS.update().values(default_limit=4))
        first = conn.connection.dbapi_connection
    # Someone below SQLAlchemy's Connection (no events) writes and returns
    # the connection mid-transaction: the pool must roll it back.
    raw = engine.raw_connection()
    assert raw.dbapi_connection is first
    with raw.cursor() as cursor:
        cursor.execute('UPDATE registered_limits SET default_limit = 5')
    raw.close()
    assert _limit_settable(engine)
    with db_api.reader_connection(ctx) as conn:
        assert conn.execute(sa.select(_LIMITS.c.default_limit)
                            ).scalar() == 2


@pytest.mark.parametrize('backend', ['mysql'], indirect=True)
def test_connections_are_plain_from_the_start_where_the_server_has_no_tls(
        backend):
    """Once a connection has shown that the server offers no TLS, new ones
    ask for none (``ssl_disabled``) and skip building a TLS context, which
    PyMySQL's preferred TLS would build and then not use. Where the server
    offers TLS, PyMySQL decides as before."""
    engine = db_api.get_engine()
    engine.dispose()
    with engine.connect() as conn:
        offered = conn.exec_driver_sql(
            "SHOW GLOBAL VARIABLES LIKE 'have_ssl'").one()[1] == 'YES'
    made = []
    sa.event.listen(engine, 'do_connect',
                    lambda dialect, record, cargs, cparams:
                    made.append(dict(cparams)))
    try:
        raw = engine.raw_connection()
        raw.invalidate()  # a new connection, not the pooled one
        raw.close()
        raw = engine.raw_connection()
        plain = raw.driver_connection.ssl is False
        raw.close()
    finally:
        engine.dispose()
    assert made
    if offered:  # PyMySQL decides, as without cyquota
        assert not any(cparams.get('ssl_disabled') for cparams in made)
    else:
        assert plain
        assert all(cparams.get('ssl_disabled') for cparams in made)
