"""The one statements: the ledger's common reserve, commit and rollback,
of one resource or several, each one statement that is its own
transaction, told here once.

Each is prepared once per connection (``cyquota.db.prepared``: by
psycopg on PostgreSQL, by name on MariaDB) and per number of resources
(or reservations), and runs on an autocommit
connection (``db_api.autocommit_connection``), outside any transaction
of the caller's: one round trip, no COMMIT after it.

* PostgreSQL (``postgresql``): a SELECT of data-modifying CTEs chaining
  the conditional UPDATEs and INSERTs of ``statements``. CTEs that do not
  depend on one another run in no set order, so each step that must
  follow another reads that one's rows: the ledger's lock order holds
  inside the statement. A reserve of one resource chains its conditional
  UPDATE and the INSERT of its reservation; of several, it locks the
  project's usage rows of those resources first, in resource order
  (``ORDER BY resource FOR UPDATE``), judges every delta against the rows
  as locked, then changes them in one UPDATE and inserts every
  reservation in one INSERT. A commit or rollback ends the reservation
  rows (``UPDATE ... RETURNING``), then (of several resources) locks
  their usage rows in resource order the same way, moves the counts,
  then (a commit) what their consumers hold. The end of one reservation,
  an attach's commit, has a statement of its own without the batch's
  aggregates: a statement that waited for the usage row's lock sets all
  its parts up again while it holds it (EvalPlanQual), so the smaller it
  is, the shorter the queue behind it. PostgreSQL keeps one plan of a
  prepared statement for any parameters, often made while the tables
  are small; each lookup is written to leave the planner one good choice,
  a row by its key (``tests/functional/test_ledger_backends.py`` checks
  the kept plans).
* MariaDB (``mariadb``): the same steps in one compound statement
  (``BEGIN NOT ATOMIC ... END``, built by ``compound``), one after the
  other in a transaction it commits or rolls back itself, compiled from
  ``statements`` as they are; the usage rows of several resources in one
  UPDATE through their unique index ``ORDER BY resource``. It ends
  reservations each of a resource of its own (an attach or detach of
  several), or all of one resource (a commit: of one consumer).

A reserve of one resource that claims a device for the common request
(``cyquota.placement.claim_steps``, given by the device hook) is one
statement too: after the usage row's conditional UPDATE, it reads the
first provider with room, moves that provider's generation on where it is
unchanged (its lock, after the usage row's, as the locked path takes
them) and inserts the consumer, the allocation and the reservation. It
refuses, undoing its UPDATE, wherever the read is not decisive (a pending
lease on the device, a step size, a sharing provider) or the generation
moved; the locked path then claims as ``cyquota.placement.allocations``
does. PostgreSQL plans every prepared one statement once
(``plan_cache_mode = force_generic_plan`` on cyquota's connections,
``db.engine_tuning``): planning this one cost more than running it.

Each statement only does what the steps do when every condition holds:
where its first step changes nothing, nothing is written; where a later
one does not hold, it raises to roll back what it wrote. Neither server's
ends a reservation past its expiry, nor (a rollback) one holding
devices. Whatever a statement leaves, the caller leaves to the locked
steps (``run_alone`` says which), as on SQLite.

Here: which statement serves which backend (``FORMS``, by the backend
``cyquota.db.backends.of`` gives), and how one runs; the dicts of their
binds are built by ``cyquota.quota.ledger.binds``.
"""

import typing

from cyquota.db import api as db_api
from cyquota.db import backends
from cyquota.db.backends import mariadb as mariadb_backend
from cyquota.db.backends import postgresql as postgresql_backend
from cyquota.db import prepared
from cyquota.db import refusal
from cyquota.quota.ledger import binds
from cyquota.quota.ledger.one_statement import mariadb
from cyquota.quota.ledger.one_statement import postgresql
from cyquota.quota.ledger import statements as sql


class Forms(typing.NamedTuple):
    """A server's one statements, each built for a dialect and returned
    prepared with the names of its binds: ``reserve(dialect, limit,
    count, request_id)``, ``claiming_reserve(dialect, limit, request_id,
    steps)`` and ``end(dialect, target, count)``."""

    reserve: typing.Callable
    claiming_reserve: typing.Callable
    end: typing.Callable


def _prepared_ctes(ctes):
    """A form of ``Forms`` from PostgreSQL's ``ctes(*args)``: prepared,
    with the names of its binds."""
    def form(dialect, *args):
        built = ctes(*args)
        return (prepared.Prepared.of(built, dialect),
                binds.names_of(built, dialect=dialect))
    return form


#: The one statements of each backend that has them.
FORMS: dict[backends.Backend, Forms] = {
    postgresql_backend.POSTGRESQL: Forms(
        _prepared_ctes(postgresql.reserve_ctes),
        _prepared_ctes(postgresql.claiming_reserve_ctes),
        _prepared_ctes(postgresql.end_ctes)),
    mariadb_backend.MARIADB: Forms(
        lambda dialect, limit, count, request_id: mariadb.reserve_block(
            limit, count, request_id, dialect),
        lambda dialect, limit, request_id, steps:
        mariadb.claiming_reserve_block(limit, request_id, dialect, steps),
        lambda dialect, target, count: mariadb.end_block(
            target, count, dialect)),
}


class OneStatement:
    """A one statement as its server runs it (``prepared``: a
    ``prepared.Prepared``) and the dict of the binds it takes
    (``binds``: a ``binds.Binds``)."""

    def __init__(self, statement, binds):
        self.prepared = statement
        self.binds = binds


def reserve(dialect, limit, count, request_id):
    """The one-statement reserve of ``count`` resources for ``dialect``
    (``postgresql.reserve_ctes`` or ``mariadb.reserve_block``, prepared),
    for ``run_alone``; its binds of ``statements.Reserve`` and of a
    ``statements.Resource`` a resource."""
    statement, names = _forms(dialect).reserve(dialect, limit, count,
                                               request_id)
    return OneStatement(statement,
                        binds.Binds(names, sql.Reserve, sql.Resource))


def claiming_reserve(dialect, limit, request_id, steps):
    """The one-statement reserve of one resource that claims a device by
    ``steps`` (``placement.claim_steps``, through the device hook) for
    ``dialect`` (``postgresql.claiming_reserve_ctes`` or
    ``mariadb.claiming_reserve_block``, prepared), as ``reserve``'s."""
    statement, names = _forms(dialect).claiming_reserve(
        dialect, limit, request_id, steps)
    return OneStatement(statement,
                        binds.Binds(names, sql.Reserve, sql.Resource))


def end(target, count, dialect):
    """The one-statement end (``target``: committed or rolled back) of
    ``count`` reservations for ``dialect`` (``postgresql.end_ctes`` or
    ``mariadb.end_block``, prepared), for ``run_alone``; its binds of
    ``statements.End`` and of a ``statements.Ended`` a reservation."""
    statement, names = _forms(dialect).end(dialect, target, count)
    return OneStatement(statement, binds.Binds(names, sql.End, sql.Ended))


def _forms(dialect) -> Forms:
    """The ``Forms`` of ``dialect``'s backend (``available_on``)."""
    return FORMS[backends.of(dialect)]


def runs_alone(context):
    """Whether the one statements serve ``context``: cyquota is on a
    server that has them (``available_on``), and no transaction is in
    progress on ``context`` (which theirs would not join)."""
    return (available_on(db_api.get_engine().dialect)
            and not db_api.in_transaction(context))


def available_on(dialect):
    """Whether ``dialect`` has the one statements: its backend has
    ``FORMS`` and prepares statements there (PostgreSQL, MariaDB through
    PyMySQL)."""
    backend = backends.of(dialect)
    return backend in FORMS and backend.prepares(dialect)


def run_alone(statement, params):
    """Run the one statement ``statement`` (a ``OneStatement``) with
    ``params`` (of its ``binds``) as a transaction of its own; returns
    whether it did all it was for. If not, it changed nothing: having
    written nothing (PostgreSQL's says 0), or by an error that undid what
    it wrote (``refusal.REFUSAL``)."""
    try:
        with db_api.autocommit_connection() as conn:
            result = statement.prepared.run(conn, params)
            # MariaDB's sends no rows: it refuses, or it did everything.
            return not result.returns_rows or result.scalar_one() == 1
    except refusal.Refused:
        return False
