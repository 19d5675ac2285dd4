"""How a connection's transaction ends and how it comes back to the pool
(``engine_tuning.tune`` installs these on every engine it tunes).

* No ROLLBACK on return after a transaction that ended: the pool rolls
  back only a connection that may still hold a transaction.
* On psycopg, a ROLLBACK keeps psycopg's prepared statements.
* A lost connection's failed reset is one WARNING line, not an ERROR
  traceback.

Where oslo.db and SQLAlchemy offer no public switch this reaches below
them; tests/unit/test_db_engine.py checks each attribute it sets.
"""

import logging

from psycopg import pq
from sqlalchemy import event
from sqlalchemy.pool import base as pool_base

#: In a pooled connection's ``info``: its last act was its Connection's own
#: COMMIT or ROLLBACK, which (no error followed) left no transaction open.
_ENDED = 'cyquota_transaction_ended'


def _pooled_info(conn):
    """``conn``'s pooled connection's ``info``; None once it is closed or
    invalidated (reading ``conn.info`` then would reconnect)."""
    if conn.closed or conn.invalidated:
        return None
    return conn.info


def _mark_ended(conn):
    info = _pooled_info(conn)
    if info is not None:
        info[_ENDED] = True


def _unmark_statement(conn, *args):
    # Any statement may open a transaction again.
    conn.info.pop(_ENDED, None)


def unmark_error(context):
    # A failed COMMIT or ROLLBACK may leave one open.
    info = (None if context.connection is None
            else _pooled_info(context.connection))
    if info is not None:
        info.pop(_ENDED, None)


def _rollback_unless_ended(dialect):
    def rollback(dbapi_connection, connection_record, reset_state):
        # The mark is taken off at every return, so it never outlives the
        # checkout that made it (a raw_connection() user sends no events).
        if (connection_record.info.pop(_ENDED, False)
                or reset_state.transaction_was_reset):
            return
        try:
            dialect.do_rollback(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            # psycopg tells a lost connection only with the connection in
            # hand, which the pool's log record of this error lacks: mark
            # it for DeadConnectionReset.
            if dialect.is_disconnect(error, dbapi_connection, None):
                error.cyquota_connection_lost = True
            raise
    return rollback


def no_rollback_after_an_end(engine):
    # The pool rolls every connection back as it comes back, even one
    # whose transaction oslo.db has just committed or rolled back: with
    # PyMySQL a ROLLBACK round trip after each transaction, a read's
    # second. Roll back only a connection that may hold a transaction.
    # SQLAlchemy's way is the pool's reset event with reset_on_return
    # None, a pool constructor argument that oslo.db does not pass: set
    # the attribute it sets (tests/unit/test_db_engine.py checks it).
    engine.pool._reset_on_return = pool_base.reset_none
    event.listen(engine.pool, 'reset', _rollback_unless_ended(engine.dialect))
    event.listen(engine, 'commit', _mark_ended)
    event.listen(engine, 'rollback', _mark_ended)
    event.listen(engine, 'before_cursor_execute', _unmark_statement)
    # handle_error: unmark_error, from engine_tuning._ahead_of_oslo_db.


class DeadConnectionReset(logging.Filter):
    """Turn the pool's ERROR traceback for a lost connection into one
    WARNING line.

    A connection that comes back to the pool is rolled back; when its
    server went away meanwhile (killed, restarted) the rollback fails, and
    SQLAlchemy logs "Exception during reset or similar" at ERROR with a
    traceback, although it then only replaces the connection and the
    next transaction (or its retry) gets a new one. Other reset errors
    keep their ERROR and traceback.
    """

    def __init__(self, dialect):
        super().__init__()
        self.dialect = dialect

    def filter(self, record):
        error = record.exc_info[1] if record.exc_info else None
        if (isinstance(error, self.dialect.loaded_dbapi.Error)
                and (getattr(error, 'cyquota_connection_lost', False)
                     or self.dialect.is_disconnect(error, None, None))):
            record.levelno, record.levelname = logging.WARNING, 'WARNING'
            record.msg = ('Connection lost before its reset on return to '
                          'the pool, replaced: %s')
            record.args = (str(error).splitlines()[0],)
            record.exc_info = record.exc_text = None
        return True


def quiet_dead_connection_resets(engine):
    logger = getattr(engine.pool.logger, 'logger', engine.pool.logger)
    for old in [f for f in logger.filters
                if isinstance(f, DeadConnectionReset)]:
        logger.removeFilter(old)
    logger.addFilter(DeadConnectionReset(engine.dialect))


def _rollback_keeping_prepared(dbapi_connection):
    pgconn = dbapi_connection.pgconn
    if pgconn.transaction_status == pq.TransactionStatus.IDLE:
        return
    if pgconn.exec_(b'ROLLBACK').status != pq.ExecStatus.COMMAND_OK:
        dbapi_connection.rollback()  # psycopg's own error, if it failed


def keep_prepared_through_rollbacks(dialect):
    # psycopg forgets every statement it prepared, and the counts of those
    # it has not yet, at each ROLLBACK (one that undid DDL may have changed
    # what they read), then sends DEALLOCATE ALL. Every read transaction
    # ends in a ROLLBACK: a connection of the API, which reads between two
    # writes, never ran a statement prepare_threshold times in a row, and
    # planned every statement anew at every run (the lease create's
    # transaction took 2 ms on the server instead of 0.5). PostgreSQL keeps
    # prepared statements through a ROLLBACK, and cyquota changes its schema
    # only in migrations: roll back on the connection's libpq handle
    # (psycopg's public low-level interface), which leaves psycopg's
    # statements as they are. The pool's reset calls this too
    # (_rollback_unless_ended); tests/unit/test_db_engine.py checks that a
    # Connection's rollback does.
    if dialect.driver == 'psycopg':
        dialect.do_rollback = _rollback_keeping_prepared
