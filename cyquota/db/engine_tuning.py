"""How cyquota runs the engines that oslo.db's enginefacade builds.

``options`` are what cyquota asks of enginefacade for a database URL;
``tune`` then fits the engine it built to the ledger, server by server:
SQLite writers take the write lock at BEGIN and keep pooled connections;
MariaDB talks utf8mb4 unless the URL names a charset, reads at READ
COMMITTED (with causal reads on Galera) and skips a TLS context its
server does not offer; PostgreSQL plans its prepared statements once and
keeps them through a ROLLBACK; no pre-ping, how a connection comes back
to the pool (``pool_returns``), and the errors that the ledger raises as
its own (``translate_ahead_of_oslo_db``: its refusals) translated ahead
of oslo.db.
``autocommit`` makes an engine's connections autocommit.

Where oslo.db and SQLAlchemy offer no public switch this reaches below
them; tests/unit/test_db_engine.py checks each attribute it sets.
"""

import functools
import urllib.parse

from oslo_db.sqlalchemy import exc_filters
from pymysql import charset as pymysql_charset
from pymysql.constants import CLIENT as pymysql_client
from sqlalchemy.engine import url as sa_url
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy import pool as sa_pool

from cyquota.conf import CONF
from cyquota.db import pool_returns

#: Seconds a SQLite writer waits for the write lock.
SQLITE_BUSY_TIMEOUT = 60


def _sqlite_begin_immediate(conn, cursor, statement, parameters, context,
                            executemany):
    # SQLite ignores FOR UPDATE; a writer must hold the database's write
    # lock from its first statement instead, or two transactions that read
    # the same counts both try to write and one fails "database is locked".
    # oslo.db begins every transaction with a plain BEGIN: make it IMMEDIATE.
    if statement == 'BEGIN':
        statement = 'BEGIN IMMEDIATE'
    return statement, parameters


def _mysql_read_committed(dbapi_connection, connection_record):
    # Every read that follows a row lock must see all that was committed
    # under that lock, as in PostgreSQL's default READ COMMITTED. InnoDB's
    # default REPEATABLE READ would serve later plain reads from a snapshot
    # taken at the transaction's first read, possibly before the lock.
    with dbapi_connection.cursor() as cursor:
        cursor.execute('SET SESSION TRANSACTION ISOLATION LEVEL '
                       'READ COMMITTED')


def _galera_causal_reads(dbapi_connection, connection_record):
    # A Galera node applies what other nodes committed a moment after they
    # report it: without a causality check a read here (a commit looking up
    # the reservation another node just made) may not see it yet. Make
    # every read wait until this node has applied all that the cluster
    # committed before it (wsrep_sync_wait 1), unless the operator chose a
    # check already. Writes need none: certification refuses a stale one.
    with dbapi_connection.cursor() as cursor:
        cursor.execute("SHOW VARIABLES WHERE Variable_name IN "
                       "('wsrep_on', 'wsrep_sync_wait')")
        variables = dict(cursor.fetchall())
        if (variables.get('wsrep_on') == 'ON'
                and variables.get('wsrep_sync_wait') == '0'):
            cursor.execute('SET SESSION wsrep_sync_wait = 1')


class _PlainWhereTheServerHasNoTls:
    """PyMySQL (1.2 and later) prefers TLS when no ``ssl`` option is
    given: before it learns what the server offers, every connection
    builds a TLS context from the system's CA store (about 20 ms of CPU,
    where the rest of a connection takes 1 ms: under load, the p99 of
    every request that waits for a new connection), and falls back to a
    plain connection where the server offers none. Once a connection
    shows that the server offers none, ask for plain ones from the start
    (``ssl_disabled``); if a later one shows that it does, prefer TLS
    again. A URL with an ``ssl`` option of its own is left to PyMySQL."""

    def __init__(self, engine):
        self.plain = False
        if (engine.dialect.driver == 'pymysql'
                and not any(key.startswith('ssl')
                            for key in engine.url.query)):
            event.listen(engine, 'do_connect', self.ask)
            event.listen(engine, 'connect', self.learn)

    def ask(self, dialect, connection_record, cargs, cparams):
        if self.plain:
            cparams['ssl_disabled'] = True

    def learn(self, dbapi_connection, connection_record):
        self.plain = not (dbapi_connection.server_capabilities
                          & pymysql_client.SSL)


def _failed_connect_is_disconnect(context):
    # A connection that cannot be opened is a lost connection, to retry.
    # oslo.db knows a refused PostgreSQL connection only by libpq's old
    # wording ("could not connect to server"); libpq 14 and later say
    # "connection to server at ... failed", and a server that is shutting
    # down or starting up refuses with FATAL 57P03. Unmarked, these reach
    # the caller as a bare OperationalError instead of a retried
    # DBConnectionError.
    if context.connection is None and isinstance(
            context.sqlalchemy_exception, sa_exc.OperationalError):
        context.is_disconnect = True


def _no_pre_ping(engine):
    # oslo.db turns on SQLAlchemy's pre-ping: a SELECT 1 round trip before
    # every transaction. cyquota retries whole transactions after a lost
    # connection instead (retry_on_conflict), so the ping only costs time.
    # Neither oslo.db (it passes pool_pre_ping=True itself) nor SQLAlchemy
    # (pre_ping is a pool constructor argument) offers a public switch on
    # a built engine; tests/unit/test_db_engine.py checks that this
    # attribute still is SQLAlchemy's pre-ping flag.
    engine.pool._pre_ping = False


#: The ``handle_error`` listeners that see an error before oslo.db
#: translates it (``translate_ahead_of_oslo_db``).
_TRANSLATORS = []


def translate_ahead_of_oslo_db(translator):
    """Have ``translator`` (a ``handle_error`` listener) see every error of
    every ``tune``d engine before oslo.db does: an exception it raises
    reaches the caller as it is, neither logged nor wrapped by oslo.db
    (``refusal.Refused``)."""
    if translator not in _TRANSLATORS:
        _TRANSLATORS.append(translator)


def _translate(context):
    for translator in _TRANSLATORS:
        translator(context)


def _ahead_of_oslo_db(engine):
    # oslo.db's error handler raises the error it translates, so a
    # handle_error listener after it never runs; and it reads the mark of
    # _failed_connect_is_disconnect. SQLAlchemy calls the listeners in
    # the order they were added, and ``insert=True`` does not reach ahead
    # of oslo.db's.
    event.remove(engine, 'handle_error', exc_filters.handler)
    event.listen(engine, 'handle_error', _failed_connect_is_disconnect)
    event.listen(engine, 'handle_error', pool_returns.unmark_error)
    event.listen(engine, 'handle_error', _translate)
    event.listen(engine, 'handle_error', exc_filters.handler, retval=True)


def _keep_sqlite_connections(engine):
    # oslo.db gives a SQLite file a NullPool: a new connection, which reads
    # the schema again, for every transaction, a third of a reserve's time.
    # Keep them in a QueuePool, with the same connect listeners.
    old = engine.pool
    if isinstance(old, sa_pool.NullPool):
        engine.pool = sa_pool.QueuePool(
            old._creator, pool_size=CONF.database.max_pool_size,
            max_overflow=CONF.database.max_overflow,
            timeout=CONF.database.pool_timeout or SQLITE_BUSY_TIMEOUT,
            dialect=old._dialect, _dispatch=old.dispatch)
        old.dispose()


def _mysql_charsets(connection):
    """The charsets that the MySQL or MariaDB URL ``connection`` and
    ``[database] connection_parameters`` name (empty: none named), or
    None for another database.

    :raises sqlalchemy.exc.ArgumentError: a charset PyMySQL does not know,
        which it would report as an AttributeError at the first connection.
    """
    try:
        url = sa_url.make_url(connection)
    except sa_exc.ArgumentError:
        return None  # Reported where the engine is made.
    if url.get_backend_name() not in ('mysql', 'mariadb'):
        return None
    named = urllib.parse.parse_qs(
        CONF.database.connection_parameters or '').get('charset', [])
    value = url.query.get('charset', ())
    named += [value] if isinstance(value, str) else list(value)
    for charset in named:
        if url.get_driver_name() == 'pymysql' and (
                pymysql_charset.charset_by_name(charset) is None):
            raise sa_exc.ArgumentError(
                "unknown charset '%s' in the database URL: PyMySQL knows "
                "none by that name (cyquota's tables are utf8mb4)" % charset)
    return named


def options(connection):
    """The enginefacade ``configure()`` options for the database URL
    ``connection``."""
    chosen = {'sqlite_fk': True}
    if connection.startswith('sqlite'):
        # Writers queue on SQLite's single write lock; wait for it rather
        # than fail after pysqlite's default 5 s. Pooled connections pass
        # between threads, one at a time (see _keep_sqlite_connections).
        chosen['connection_parameters'] = (
            'timeout=%d&check_same_thread=false' % SQLITE_BUSY_TIMEOUT)
    elif _mysql_charsets(connection) == []:
        # oslo.db asks for the 3-byte ``utf8`` where a MySQL URL names no
        # charset: a name or metadata of 4-byte characters (an emoji)
        # would fail as a server error. The tables are utf8mb4.
        chosen['connection_parameters'] = '&'.join(filter(None, (
            CONF.database.connection_parameters, 'charset=utf8mb4')))
    # oslo.db yields to other green threads (time.sleep(0)) at every
    # connection check-in, for eventlet. cyquota runs no eventlet, and the
    # sleep costs a tenth of a reserve.
    chosen['thread_checkin'] = False
    return chosen


def tune(engine):
    """Fit ``engine``, as enginefacade built it with ``options``, to the
    ledger (see the module's description)."""
    _no_pre_ping(engine)
    _ahead_of_oslo_db(engine)
    if engine.dialect.name == 'sqlite':
        _keep_sqlite_connections(engine)
        event.listen(engine, 'before_cursor_execute',
                     _sqlite_begin_immediate, retval=True)
    elif engine.dialect.name == 'mysql':
        _PlainWhereTheServerHasNoTls(engine)
        event.listen(engine, 'connect', _mysql_read_committed)
        event.listen(engine, 'connect', _galera_causal_reads)
    elif engine.dialect.name == 'postgresql':
        event.listen(engine, 'connect', _postgresql_generic_plans)
        pool_returns.keep_prepared_through_rollbacks(engine.dialect)
    if engine.dialect.name != 'sqlite':
        # oslo.db's start-up check left a connection in the pool that
        # predates the listeners.
        engine.dispose()
    pool_returns.no_rollback_after_an_end(engine)
    pool_returns.quiet_dead_connection_resets(engine)


def _postgresql_generic_plans(dbapi_connection, connection_record):
    # cyquota's prepared statements (``prepared``: the one statements,
    # write batches, the lease calendar's reads) are written for the plan
    # kept for any parameters. Left to choose, PostgreSQL plans one anew at
    # every run where a plan for its values costs less than the generic
    # plan's estimate: that planning cost more than running the claiming
    # reserve, and made the calendar's reads dearer in a large calendar
    # than in a small one. psycopg prepares every statement a connection
    # runs often (``prepared``); one it has not prepared yet is planned
    # for its values whatever this says.
    with dbapi_connection.cursor() as cursor:
        cursor.execute('SET plan_cache_mode = force_generic_plan')
    dbapi_connection.commit()  # Kept, whatever the pool rolls back.


def _autocommit(dialect, dbapi_connection, connection_record):
    dialect.set_isolation_level(dbapi_connection, 'AUTOCOMMIT')


def autocommit(engine):
    """Put every connection of ``engine`` (a ``tune``d one) in autocommit
    mode, from the next one it opens."""
    event.listen(engine, 'connect', functools.partial(
        _autocommit, engine.dialect))
    # A Connection that closes rolls back; in autocommit mode there is
    # nothing to roll back, and PyMySQL would still send a ROLLBACK. The
    # create_engine() argument that skips it is not oslo.db's to pass: set
    # the flag it sets (tests/unit/test_db_engine.py checks it).
    engine.dialect.skip_autocommit_rollback = True
    engine.dispose()
