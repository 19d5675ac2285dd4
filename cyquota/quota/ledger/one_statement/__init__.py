"""The common reserve, commit and rollback, of one resource or several,
as one statement each, prepared once per connection
(``cyquota.db.prepared``) and per number of resources (or reservations),
each its own transaction on an autocommit connection
(``db_api.autocommit_connection``): one round trip, no COMMIT after it.
On PostgreSQL, data-modifying CTEs chain the conditional UPDATEs and
INSERTs of ``statements``; on MariaDB, a compound statement (``BEGIN NOT
ATOMIC ... END``) runs them one after the other in a transaction it
commits or rolls back itself. Those of several resources lock the usage
rows in resource order before they change them (PostgreSQL: a locking
SELECT ``ORDER BY resource``; MariaDB: one UPDATE ``ORDER BY resource``
through their unique index).

Each statement only does what the multi-statement form does when every
condition holds; where one does not, it changes nothing and the caller
leaves the decision to the locked path (``run_alone``). CTEs that do not
depend on one another run in no set order, so each step that must follow
another reads that one's rows: the ledger's lock order holds inside a
statement too.

Here: which statement serves which server, and how one runs. The
statements themselves are in ``postgresql`` and ``mariadb``; the names of
their binds in ``binds``.
"""

from cyquota.db import api as db_api
from cyquota.db import engine_tuning
from cyquota.db import prepared
from cyquota.quota.ledger.one_statement import mariadb
from cyquota.quota.ledger.one_statement import postgresql


def reserve(dialect, limit, count, request_id):
    """The one-statement reserve of ``count`` resources for ``dialect``
    (``postgresql.reserve_ctes`` or ``mariadb.reserve_block``, prepared),
    for ``run_alone``."""
    if is_mariadb(dialect):
        return mariadb.reserve_block(dialect, limit, count, request_id)
    return prepared.Prepared.of(
        postgresql.reserve_ctes(limit, count, request_id), dialect)


def end(target, count, dialect):
    """The one-statement end (``target``: committed or rolled back) of
    ``count`` reservations for ``dialect`` (``postgresql.end_ctes`` or
    ``mariadb.end_block``, prepared), for ``run_alone``."""
    if is_mariadb(dialect):
        return mariadb.end_block(target, count, dialect)
    return prepared.Prepared.of(postgresql.end_ctes(target, count),
                                dialect)


def runs_alone(context):
    """Whether the one statements serve ``context``: cyquota is on a
    server that has them (``has_them``), and no transaction is in
    progress on ``context`` (which theirs would not join)."""
    return (has_them(db_api.get_engine().dialect)
            and not db_api.in_transaction(context))


def has_them(dialect):
    """Whether ``dialect`` has the one statements: PostgreSQL's, or
    MariaDB's through PyMySQL (``is_mariadb``)."""
    return dialect.name == 'postgresql' or is_mariadb(dialect)


def run_alone(statement, params):
    """Run the one statement ``statement`` with ``params`` as a
    transaction of its own; returns whether it did all it was for. If
    not, it changed nothing: having written nothing (PostgreSQL's says
    0), or by an error that undid what it wrote (``engine_tuning.REFUSAL``)."""
    try:
        with db_api.autocommit_connection() as conn:
            result = statement.run(conn, params)
            # MariaDB's sends no rows: it refuses, or it did everything.
            return not result.returns_rows or result.scalar_one() == 1
    except engine_tuning.Refused:
        return False


def is_mariadb(dialect):
    """Whether ``dialect`` is MariaDB's through PyMySQL, which runs
    compound statements, prepared too."""
    return (dialect.name == 'mysql' and dialect.is_mariadb
            and dialect.driver == 'pymysql')
