"""Access to the database through oslo.db's enginefacade.

Every ledger function runs in ``writer(context)`` / ``reader(context)``;
nested calls on the same context join the outer transaction, so a limit
source read inside a reserve costs no extra transaction. How cyquota runs
the engines themselves is ``engine_tuning``'s.
"""

import contextlib
import threading

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade

from cyquota.conf import CONF
from cyquota.db import engine_tuning
from cyquota import redaction

_LOCK = threading.Lock()
_context_manager = None
_autocommit_manager = None


def _configured_manager():
    """A new enginefacade transaction context configured from CONF, its
    engine tuned as cyquota runs it (``engine_tuning``)."""
    manager = enginefacade.transaction_context()
    manager.configure(**engine_tuning.options(CONF.database.connection))
    engine_tuning.tune(manager.writer.get_engine())
    return manager


def context_manager():
    """The enginefacade transaction context, configured from CONF."""
    global _context_manager
    if _context_manager is None:
        with _LOCK:
            if _context_manager is None:
                _context_manager = _configured_manager()
    return _context_manager


def get_autocommit_engine():
    """The engine of ``autocommit_connection``: the same database and
    settings as ``get_engine``'s, its own pool of connections in
    autocommit mode (made with the first one: none idle until used)."""
    global _autocommit_manager
    if _autocommit_manager is None:
        with _LOCK:
            if _autocommit_manager is None:
                manager = _configured_manager()
                engine_tuning.autocommit(manager.writer.get_engine())
                _autocommit_manager = manager
    return _autocommit_manager.writer.get_engine()


def reset():
    """Forget the engine so the next use reads ``[database]`` again."""
    global _context_manager, _autocommit_manager
    with _LOCK:
        managers = (_context_manager, _autocommit_manager)
        _context_manager = _autocommit_manager = None
    for manager in managers:
        if manager is not None:
            with contextlib.suppress(Exception):
                manager.writer.get_engine().dispose()


def shown_url(url=None):
    """The database URL (default ``[database] connection``) with its
    password masked, to log or print (also a URL that does not parse)."""
    if url is not None and not isinstance(url, str):
        return url.render_as_string(hide_password=True)
    return redaction.mask_url(url or CONF.database.connection)


def get_engine():
    """The engine of ``writer`` and ``reader``."""
    return context_manager().writer.get_engine()


def writer(context):
    """A read-write transaction on ``context`` (joins one in progress)."""
    return context_manager().writer.using(context)


def writer_connection(context):
    """A read-write transaction as a Core connection, without the ORM
    session's bookkeeping (the ledger's hot paths); joins one in progress,
    and sessions opened inside join it."""
    return context_manager().writer.connection.using(context)


def in_transaction(context):
    """Whether ``context`` is inside a transaction (which ``writer`` and
    the like would join)."""
    try:
        context.transaction_ctx
    except db_exc.NoEngineContextEstablished:
        return False
    return True


def autocommit_connection():
    """A Core connection in autocommit mode, for statements that are
    their own transaction (a MariaDB compound statement that starts one
    and commits or rolls it back itself, a PostgreSQL statement of CTEs
    that raises to roll back): no COMMIT round trip after them. It joins
    no transaction in progress; see ``in_transaction``. Its errors are
    translated as ``writer``'s."""
    return get_autocommit_engine().connect()


def reader(context):
    """A read-only transaction on ``context`` (joins one in progress)."""
    return context_manager().reader.using(context)


def reader_connection(context):
    """A read-only transaction as a Core connection (``reader`` without the
    ORM session's bookkeeping: the reads every usage request makes); joins
    one in progress."""
    return context_manager().reader.connection.using(context)


def one_read_connection(context):
    """A connection for a read that is one statement. On PostgreSQL and
    MariaDB, where no transaction is in progress on ``context`` and reads
    have no replica of their own (``[database] slave_connection``), it is
    an ``autocommit_connection``: one statement sees one snapshot by
    itself, and it is spared the round trips of a transaction (PostgreSQL's
    driver sends BEGIN before it, and both end it with ROLLBACK).
    Otherwise it is ``reader_connection(context)``."""
    if (get_engine().dialect.name == 'sqlite' or in_transaction(context)
            or CONF.database.slave_connection):
        return reader_connection(context)
    return autocommit_connection()


def _retry_on(exc):
    # A lost race to insert the first row of a pair: the retry finds it.
    return isinstance(exc, db_exc.DBDuplicateEntry)


def retry_on_conflict(func):
    """Retry a whole transaction after a deadlock, duplicate or disconnect.

    On a Galera cluster a write that lost certification to another node's
    is reported as a deadlock (error 1213, oslo.db's DBDeadlock) and
    retried the same way.

    Apply it outside the transaction so each attempt starts afresh.
    """
    def wrapper(*args, **kwargs):
        retry = oslo_db_api.wrap_db_retry(
            max_retries=CONF.quota.db_max_retries, retry_interval=0.01,
            inc_retry_interval=True, max_retry_interval=0.5, jitter=True,
            retry_on_deadlock=True, retry_on_disconnect=True,
            exception_checker=_retry_on)
        return retry(func)(*args, **kwargs)
    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    wrapper.__wrapped__ = func
    return wrapper
