"""Statements prepared once per connection, on PostgreSQL and MariaDB.

A server parses (and PostgreSQL plans) a statement every time it is sent.
For the ledger's one-statement reserve, commit and rollback (``quota.
ledger.one_statement``), chains of CTEs on PostgreSQL and compound
statements on MariaDB, that costs more than running them. A ``Prepared``
statement is sent as ``PREPARE`` the first time a connection runs it and
as ``EXECUTE`` after that, still through the oslo.db engine, so its errors
are translated and retried as any other's.

A prepared statement lives as long as its server session, whatever the
transactions in it do; a new connection (after a restart, say) prepares
again. A connection keeps at most ``PER_CONNECTION``, deallocating the one
it ran least lately, and where MariaDB refuses one more (its
``max_prepared_stmt_count`` counts every session's) the statement runs
unprepared. A pooler that hands one client's statements to several server
sessions (PgBouncer in transaction mode) breaks prepared statements: point
cyquota at the server or at a session-mode pool.
"""

import collections
import functools
import hashlib
import re

from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

LOG = logging.getLogger(__name__)

#: A bind as psycopg2 and PyMySQL take it: %(name)s.
BIND = re.compile(r'%\((\w+)\)s')

#: The most statements one connection keeps prepared; past it, the one it
#: ran least lately is deallocated (psycopg 3 keeps 100 so). Lease writes
#: take one a shape (a number of rows and of devices), and MariaDB holds
#: at most ``max_prepared_stmt_count`` (16,382 by default) for all its
#: sessions together.
PER_CONNECTION = 100

#: MariaDB's refusal to prepare more than ``max_prepared_stmt_count``.
_TOO_MANY = 1461

#: The text of every statement prepared in this process, by name (what an
#: ``EXECUTE`` runs, for logs and tests: MariaDB does not list them).
_TEXTS = {}


class Prepared:
    """``text`` prepared on each connection that runs it, named after
    itself (so that two statements never share a name, nor one statement
    two).

    :param text: the statement, its binds in the driver's form
        (``%(name)s``), which become the prepared statement's parameters.
    :param dialect: the connection's dialect: PostgreSQL through psycopg2
        or MariaDB through PyMySQL.
    :param literals: the values of binds that are not the caller's.
    """

    def __init__(self, text, dialect, literals=None):
        self._literals = literals or {}
        self._postgresql = dialect.name == 'postgresql'
        self._plain = text
        if self._postgresql:
            # One $n a bind; the dialect's casts (%(x)s::VARCHAR) type it.
            binds = list(dict.fromkeys(BIND.findall(text)))
            text = BIND.sub(
                lambda match: '$%d' % (binds.index(match.group(1)) + 1),
                text)
        else:
            # MariaDB's ? is positional: one value an occurrence.
            binds = BIND.findall(text)
            text = BIND.sub('?', text)
        self.name = 'cyquota_%s' % hashlib.sha1(text.encode()).hexdigest()
        _TEXTS[self.name] = text
        #: The binds to send, each once (PyMySQL escapes every value it
        #: is given, used or not).
        self._binds = tuple(dict.fromkeys(binds))
        values = ', '.join('%%(%s)s' % bind for bind in binds)
        if self._postgresql:
            self._prepare = ('PREPARE %s AS %s' % (self.name, text), {})
            self._execute = 'EXECUTE %s(%s)' % (self.name, values)
        else:
            self._prepare = ('PREPARE %s FROM %%(text)s' % self.name,
                             dict(text=text))
            self._execute = 'EXECUTE %s%s' % (
                self.name, ' USING ' + values if binds else '')
        self._deallocate = ('DEALLOCATE %s' if self._postgresql
                            else 'DEALLOCATE PREPARE %s')

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
        ``params``, preparing it first on a connection that has not;
        returns its result."""
        info = conn.connection.info
        kept = info.setdefault('cyquota_prepared', collections.OrderedDict())
        refused = info.setdefault('cyquota_refused', set())
        params = dict(self._literals, **params)
        if self.name in kept:
            kept.move_to_end(self.name)
        elif self.name in refused or not self._prepare_on(conn, kept,
                                                          refused):
            return conn.exec_driver_sql(self._plain, {
                bind: params[bind] for bind in self._binds})
        return conn.exec_driver_sql(
            self._execute, {bind: params[bind] for bind in self._binds})

    def _prepare_on(self, conn, kept, refused):
        """Prepare the statement on ``conn``, whose prepared statements
        ``kept`` holds, least lately run first; False, and the name added
        to ``refused``, where MariaDB refused one more (the connection
        then runs it unprepared)."""
        if len(kept) >= PER_CONNECTION:
            oldest, _ = kept.popitem(last=False)
            conn.exec_driver_sql(self._deallocate % oldest)
        try:
            conn.exec_driver_sql(*self._prepare)
        except (db_exc.DBError, sa_exc.DBAPIError) as error:
            if self._postgresql or _code(error) != _TOO_MANY:
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
    """Whether statements are prepared on ``dialect``'s server:
    PostgreSQL's, or MariaDB's through PyMySQL (``is_mariadb``)."""
    return dialect.name == 'postgresql' or is_mariadb(dialect)


def is_mariadb(dialect):
    """Whether ``dialect`` is MariaDB's through PyMySQL, which prepares
    compound statements too."""
    return (dialect.name == 'mysql' and dialect.is_mariadb
            and dialect.driver == 'pymysql')


def execute(conn, statement, params):
    """Run ``statement`` (a SQLAlchemy construct built once, its values
    named binds, expanding ones too) on ``conn`` with ``params``:
    prepared on a server that ``serves`` (once per connection and length
    of its expanding lists), else as SQLAlchemy runs any. A read the
    server would plan longer than it runs (PostgreSQL) is cheaper so.
    The rows' fields are named as the statement labels its columns."""
    dialect = conn.dialect
    if not serves(dialect):
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
    """The statement this process prepared as ``name``."""
    return _TEXTS[name]
