"""Each database's fast paths, behind one interface.

The ledger (``cyquota.quota.ledger``) and the device code
(``cyquota.placement``) ask a database for what ``protocol.Backend``
names: whether it counts a batch's rows, returns rows from an UPDATE,
adds to a row in the INSERT that finds it there, prepares statements
(and so runs the ledger's one statements); a statement through a named
index or in its written join order; a few expressions that standard SQL
leaves to the server (``protocol.Spelling``). ``portable.Portable`` is
the plain meaning of each, step by step, valid on every database: read
it first. ``postgresql``, ``mariadb`` and ``sqlite`` each hold one
server's faster forms of the same. No module outside ``cyquota/db``
names a server: it asks ``of`` (``doc/source/architecture.rst`` holds
the rule).

The ledger's own one-statement forms, built from its statements, are in
``cyquota.quota.ledger.one_statement`` (one module a server), chosen by
the backend ``of`` returns.

To run the plain steps on a server (the ledger's model test does, to
put every path under it), replace ``of`` by ``step_by_step``::

    monkeypatch.setattr(backends, 'of', backends.step_by_step)

Every caller asks ``backends.of`` at the time it runs, and keys what it
builds by the backend it got, so that the server then runs the step-by-
step forms (no one statement, no batch, no UPDATE ... RETURNING, no
upsert, no hint), still spelled as it spells them.
"""

from cyquota.db.backends import mariadb
from cyquota.db.backends import portable
from cyquota.db.backends import postgresql
from cyquota.db.backends import protocol
from cyquota.db.backends import sqlite

Backend = protocol.Backend
PORTABLE = portable.Portable()

#: The backend of each dialect by its name; any other is ``PORTABLE``.
_BY_DIALECT = {
    'postgresql': postgresql.POSTGRESQL,
    'sqlite': sqlite.SQLITE,
    **{name: mariadb.MARIADB for name in mariadb.DIALECT_NAMES},
}

#: Each backend's plain steps in its own spelling (``step_by_step``).
_STEP_BY_STEP = {backend: portable.Portable(backend.spelling)
                 for backend in set(_BY_DIALECT.values())}


def dialect_of(bind):
    """The SQLAlchemy dialect of ``bind``: an engine, a connection, an
    ORM session or a dialect."""
    if hasattr(bind, 'get_bind'):
        bind = bind.get_bind()
    return getattr(bind, 'dialect', bind)


def of(bind) -> Backend:
    """The backend of ``bind`` (an engine, a connection, an ORM session
    or a dialect): its server's fast paths."""
    return _BY_DIALECT.get(dialect_of(bind).name, PORTABLE)


def step_by_step(bind) -> Backend:
    """The plain steps (``portable.Portable``) on ``bind``'s server,
    spelled as it spells them: what ``of`` is replaced by to run them
    there."""
    backend = _BY_DIALECT.get(dialect_of(bind).name)
    return PORTABLE if backend is None else _STEP_BY_STEP[backend]
