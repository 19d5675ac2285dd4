"""Statements the server parses once per connection, on PostgreSQL and
MariaDB.

A server parses (and PostgreSQL plans) a statement every time it is sent.
For the ledger's one-statement reserve, commit and rollback (``quota.
ledger.one_statement``), chains of CTEs on PostgreSQL and compound
statements on MariaDB, that costs more than running them. A ``Prepared``
statement is its text, its binds in the driver's form (``%(name)s``):

* On PostgreSQL, psycopg (``postgresql+psycopg://``) prepares it: a
  connection that has run one text ``prepare_threshold`` times (5) sends
  it as a prepared statement from then on, and keeps the ``prepared_max``
  (100) it ran most lately, also through a ROLLBACK (``engine_tuning``).
  psycopg2 (``postgresql+psycopg2://``, which cyquota no longer
  installs) runs it unprepared, planned at every run.
* On MariaDB through PyMySQL, which like every MySQL driver for Python
  writes the values into the text on the client, it is sent as
  ``PREPARE`` the first time a connection runs it and as ``EXECUTE`` after
  that, still through the oslo.db engine, so its errors are translated
  and retried as any other's. A connection keeps at most
  ``PER_CONNECTION``, deallocating the one it ran least lately, and where
  MariaDB refuses one more (its ``max_prepared_stmt_count`` counts every
  session's) the statement runs unprepared.

A prepared statement lives as long as its server session, whatever the
transactions in it do; a new connection (after a restart, say) prepares
again. A pooler that hands one client's statements to several server
sessions (PgBouncer in transaction mode) breaks prepared statements: point
cyquota at the server or at a session-mode pool.
"""

import collections
import functools
import hashlib
import re
import weakref

from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

LOG = logging.getLogger(__name__)

#: A bind as psycopg and PyMySQL take it: %(name)s.
BIND = re.compile(r'%\((\w+)\)s')

#: The most statements one MariaDB connection keeps prepared; past it,
#: the one it ran least lately is deallocated (as psycopg keeps 100).
#: Lease writes take one a shape (a number of rows and of devices), and
#: MariaDB holds at most ``max_prepared_stmt_count`` (16,382 by default)
#: for all its sessions together.
PER_CONNECTION = 100

#: MariaDB's refusal to prepare more than ``max_prepared_stmt_count``.
_TOO_MANY = 1461

#: The texts of the statements alive in this process that MariaDB runs
#: by name (what an ``EXECUTE`` runs, for logs and tests: MariaDB does not
#: list them); one goes with the last statement of its name.
_BY_NAME = weakref.WeakValueDictionary()


class _ServerText:
    """The text MariaDB prepares for the statements of one name."""

    __slots__ = ('text', '__weakref__')

    def __init__(self, text):
        self.text = text


class Prepared:
    """``text`` as its server runs it: prepared by psycopg, or (MariaDB)
    on each connection that runs it, named after itself (so that two
    statements never share a name, nor one statement two).

    :param text: the statement, its binds in the driver's form
        (``%(name)s``).
    :param dialect: the connection's dialect.
    :param literals: the values of binds that are not the caller's.
    """

    def __init__(self, text, dialect, literals=None):
        self._literals = literals or {}
        #: The statement as the driver takes it.
        self.text = text
        #: The binds to send, each once (PyMySQL escapes every value it
        #: is given, used or not).
        self._binds = tuple(dict.fromkeys(BIND.findall(text)))
        self._named = is_mariadb(dialect)
        if self._named:
            self._name_on_mariadb(text)

    def _name_on_mariadb(self, text):
        # MariaDB's ? is positional: one value an occurrence.
        binds = BIND.findall(text)
        server_text = BIND.sub('?', text)
        self.name = 'cyquota_%s' % hashlib.sha1(
            server_text.encode()).hexdigest()
        # Held while this statement lives (and any other of its name).
        self._server_text = _BY_NAME.setdefault(self.name,
                                                _ServerText(server_text))
        self._prepare = ('PREPARE %s FROM %%(text)s' % self.name,
                         dict(text=server_text))
        self._execute = 'EXECUTE %s%s' % (self.name, ' USING ' + ', '.join(
            '%%(%s)s' % bind for bind in binds) if binds else '')

    @classmethod
    def of(cls, statement, dialect):
        """``statement`` (a SQLAlchemy construct) prepared for
        ``dialect``; the values of its literals are kept."""
        compiled = statement.compile(dialect=dialect)
        return cls(str(compiled), dialect, {
            bind: value for bind, value in compiled.params.items()
            if value is not None})

    def run(self, conn, params):
        """Run the statement on ``conn`` (a SQLAlchemy Connection) with
        ``params``; returns its result. On MariaDB, a connection that has
        not prepared it does first."""
        params = dict(self._literals, **params)
        values = {bind: params[bind] for bind in self._binds}
        if self._named and self._ready_on(conn):
            return conn.exec_driver_sql(self._execute, values)
        return conn.exec_driver_sql(self.text, values)

    def _ready_on(self, conn):
        """Whether the statement is prepared on ``conn`` (MariaDB), having
        prepared it there now if it was not; False where MariaDB refused
        one more (the connection then runs it unprepared)."""
        info = conn.connection.info
        kept = info.setdefault('cyquota_prepared', collections.OrderedDict())
        refused = info.setdefault('cyquota_refused', set())
        if self.name in kept:
            kept.move_to_end(self.name)
            return True
        if self.name in refused:
            return False
        if len(kept) >= PER_CONNECTION:
            oldest, _ = kept.popitem(last=False)
            conn.exec_driver_sql('DEALLOCATE PREPARE %s' % oldest)
        try:
            conn.exec_driver_sql(*self._prepare)
        except (db_exc.DBError, sa_exc.DBAPIError) as error:
            if _code(error) != _TOO_MANY:
                raise
            if not refused:
                LOG.warning('The database refused to prepare one more '
                            'statement (max_prepared_stmt_count): this '
                            'connection runs the statements it refuses '
                            'unprepared. Raise the limit on the server.')
            refused.add(self.name)
            return False
        kept[self.name] = True
        return True


def _code(error):
    """The server's error number behind a driver's error, as oslo.db or
    SQLAlchemy passed it on, if any."""
    inner = getattr(error, 'inner_exception', error)
    args = getattr(getattr(inner, 'orig', inner), 'args', ())
    return args[0] if args else None


def serves(dialect):
    """Whether ``dialect``'s server runs cyquota's statements of many
    parts (CTE chains, compound statements): PostgreSQL's, or MariaDB's
    through PyMySQL (``is_mariadb``)."""
    return dialect.name == 'postgresql' or is_mariadb(dialect)


def is_mariadb(dialect):
    """Whether ``dialect`` is MariaDB's through PyMySQL, which runs
    compound statements and prepares them by name (``PREPARE``)."""
    return (dialect.name == 'mysql' and dialect.is_mariadb
            and dialect.driver == 'pymysql')


def execute(conn, statement, params):
    """Run ``statement`` (a SQLAlchemy construct built once, its values
    named binds, expanding ones too) on ``conn`` with ``params``,
    prepared: by psycopg, or on MariaDB by name (once per connection and
    length of its expanding lists). A read the server would plan longer
    than it runs (PostgreSQL) is cheaper so. The rows' fields are named as
    the statement labels its columns."""
    dialect = conn.dialect
    if not is_mariadb(dialect):
        return conn.execute(statement, params)
    expanded = _compiled(statement, dialect).construct_expanded_state(params)
    return _prepared(expanded.statement, dialect).run(
        conn, expanded.parameters)


@functools.lru_cache(maxsize=256)
def _compiled(statement, dialect):
    return statement.compile(dialect=dialect)


@functools.lru_cache(maxsize=1024)
def _prepared(text, dialect):
    return Prepared(text, dialect)


def text(name):
    """The text MariaDB runs as ``name``, of a statement alive in this
    process."""
    return _BY_NAME[name].text
