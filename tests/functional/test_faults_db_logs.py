"""A connection killed by its server is one WARNING line in the log, not an
ERROR traceback, and the next transaction gets a new connection.

The server kills the connection just as it goes back to the pool (the
moment a restart or a ``KILL`` most often meets a busy service). Back in
the middle of a transaction, the pool's rollback of it fails, and
SQLAlchemy reports that at ERROR with a traceback unless cyquota.db.api
marks it as the expected disconnect it is. Back after its COMMIT, nothing
is sent on it until the next transaction, which meets the kill and is
retried.
"""

import logging
import time

import pytest
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.quota import QUOTAS
from tests import fixtures

_CONNECTION_ID = {'postgresql': 'SELECT pg_backend_pid()',
                  'mysql': 'SELECT CONNECTION_ID()'}
_KILL = {'postgresql': 'SELECT pg_terminate_backend(%d)',
         'mysql': 'KILL %d'}
_ALIVE = {'postgresql': 'SELECT count(*) FROM pg_stat_activity '
                        'WHERE pid = %d',
          'mysql': 'SELECT count(*) FROM information_schema.processlist '
                   'WHERE id = %d'}


def _kill(backend, connection_id):
    """Kill one of this test's own connections on the shared server and
    wait until it is gone."""
    admin = sa.create_engine(
        fixtures.SERVERS[backend]
        + ('/postgres' if backend == 'postgresql' else '/'),
        isolation_level='AUTOCOMMIT', poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql(_KILL[backend] % connection_id)
        deadline = time.monotonic() + 10
        while conn.exec_driver_sql(_ALIVE[backend] % connection_id).scalar():
            assert time.monotonic() < deadline, 'the connection lives on'
            time.sleep(0.05)


def _committed(engine):
    """A transaction that commits, its connection marked to be killed."""
    with engine.connect() as conn:
        conn.connection.info['server_id'] = conn.exec_driver_sql(
            _CONNECTION_ID[engine.dialect.name]).scalar()
        conn.commit()


def _mid_transaction(engine):
    """A connection given back in the middle of its transaction (below
    SQLAlchemy's Connection, which would roll back itself), marked to be
    killed."""
    raw = engine.raw_connection()
    with raw.cursor() as cursor:
        cursor.execute(_CONNECTION_ID[engine.dialect.name])
        raw.info['server_id'] = cursor.fetchone()[0]
    raw.close()


@pytest.mark.parametrize('returned, warned', [(_committed, 0),
                                              (_mid_transaction, 1)])
def test_connection_killed_on_return_is_no_error(backend, ctx, caplog,
                                                 returned, warned):
    engine = db_api.get_engine()
    killed = []

    def kill_once(dbapi_connection, record, reset_state):
        if not killed and record.info.get('server_id') is not None:
            killed.append(record.info['server_id'])
            _kill(backend, killed[0])

    caplog.set_level(logging.WARNING)
    # Ahead of cyquota's own reset listener, which rolls back.
    sa.event.listen(engine, 'reset', kill_once, insert=True)
    try:
        returned(engine)
    finally:
        sa.event.remove(engine, 'reset', kill_once)
    assert killed, 'the connection was not killed'
    # The service answers at once, on a new connection.
    QUOTAS.reserve(ctx, 'logs', {'FPGA': 1})
    assert QUOTAS.get_project_usage(ctx, 'logs')['FPGA']['reserved'] == 1

    assert [(r.name, r.getMessage()) for r in caplog.records
            if r.levelno >= logging.ERROR or r.exc_info] == []
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING]
    assert len(warnings) == warned, warnings
    assert all(w.startswith('Connection lost before its reset on return')
               for w in warnings)
