"""What the three servers' backends share beyond the plain steps: a
batch where the driver counts its rows, UPDATE ... RETURNING where the
server has it (``Server``), and the upsert of PostgreSQL and SQLite
(``on_conflict_adding``)."""

from cyquota.db.backends import portable


class Server(portable.Portable):
    """A server's ``protocol.Backend``: the plain steps, but what its
    driver and dialect say they can do."""

    def counts_batch_rows(self, dialect):
        # psycopg2's batches do not count; psycopg 3's, PyMySQL's and
        # sqlite3's do.
        return dialect.supports_sane_multi_rowcount

    def returns_from_update(self, dialect):
        # PostgreSQL and SQLite (3.35 on); not MariaDB.
        return dialect.update_returning


def on_conflict_adding(insert, table, key, added, touched):
    """``protocol.Backend.insert_adding`` as ``INSERT ... ON CONFLICT
    (key) DO UPDATE``, ``insert`` being the dialect's (PostgreSQL's,
    SQLite's)."""
    statement = insert(table)
    return statement.on_conflict_do_update(
        index_elements=list(key),
        set_={added: table.c[added] + statement.excluded[added],
              **{column: statement.excluded[source]
                 for column, source in touched.items()}})
