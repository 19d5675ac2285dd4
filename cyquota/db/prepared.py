"""PostgreSQL statements prepared once per connection.

PostgreSQL parses and plans a statement every time it is sent. For the
ledger's one-statement reserve, commit and rollback (``quota.ledger.
one_statement``), chains of CTEs, the planning costs more than running
them. A ``Prepared`` statement is sent as ``PREPARE`` the first time a
connection runs it and as ``EXECUTE`` after that, still through the oslo.db
engine, so its errors are translated and retried as any other's.

A prepared statement lives as long as its server session, whatever the
transactions in it do; a new connection (after a restart, say) prepares
again. A pooler that hands one client's statements to several server
sessions (PgBouncer in transaction mode) breaks prepared statements: point
cyquota at PostgreSQL or at a session-mode pool.
"""

import hashlib
import re

# A bind as the psycopg2 dialect renders it: %(name)s.
_BIND = re.compile(r'%\((\w+)\)s')


class Prepared:
    """``statement`` (a SQLAlchemy construct) prepared on each connection
    that runs it, named after its text (so that two statements never share
    a name, nor one statement two).

    :param statement: what to prepare; its bind parameters become the
        prepared statement's (the values of its literals are kept).
    :param dialect: the connection's dialect (PostgreSQL through psycopg2).
    """

    def __init__(self, statement, dialect):
        compiled = statement.compile(dialect=dialect)
        order = []

        def number(match):
            if match.group(1) not in order:
                order.append(match.group(1))
            return '$%d' % (order.index(match.group(1)) + 1)

        # The dialect's casts (%(x)s::VARCHAR) give each $n its type.
        text = _BIND.sub(number, str(compiled))
        self.name = 'cyquota_%s' % hashlib.sha1(text.encode()).hexdigest()
        self._prepare = 'PREPARE %s AS %s' % (self.name, text)
        self._execute = 'EXECUTE %s(%s)' % (
            self.name, ', '.join('%%(%s)s' % bind for bind in order))
        self._literals = {bind: value
                          for bind, value in compiled.params.items()
                          if value is not None}

    def rows(self, conn, params):
        """Run the statement on ``conn`` (a SQLAlchemy Connection) with
        ``params``, preparing it first on a connection that has not;
        returns its rows."""
        prepared = conn.connection.info.setdefault('cyquota_prepared', set())
        if self.name not in prepared:
            conn.exec_driver_sql(self._prepare)
            prepared.add(self.name)
        return conn.exec_driver_sql(self._execute,
                                    dict(self._literals, **params)).all()
