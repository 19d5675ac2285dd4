"""MariaDB's backend: the ledger's one statements (compound statements,
prepared, through PyMySQL), batches whose rows its driver counts,
``INSERT ... ON DUPLICATE KEY UPDATE``, and the planner hints its
optimizer needs (``FORCE INDEX``, ``STRAIGHT_JOIN``). It compares
strings by their collation, without case: ``Spelling`` compares them
as bytes. MySQL's dialect serves both (SQLAlchemy names MariaDB's
``mysql`` through a ``mysql+`` URL, ``mariadb`` through a ``mariadb+``
one)."""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from cyquota.db.backends import portable
from cyquota.db.backends import server
from cyquota.db import prepared

#: The names SQLAlchemy gives MariaDB's (and MySQL's) dialect.
DIALECT_NAMES = ('mysql', 'mariadb')


class Spelling(portable.Spelling):
    """MariaDB's spelling: ``BINARY`` for an exact comparison."""

    def exact(self, text):
        return sa.func.binary(text)


def force_index(statement, index, table=None):
    """``statement`` (a SELECT reading ``table``, or an UPDATE) through
    the index ``index``, on MariaDB only."""
    hint = 'FORCE INDEX (%s)' % index
    for name in DIALECT_NAMES:
        statement = (statement.with_hint(hint, dialect_name=name)
                     if table is None
                     else statement.with_hint(table, hint, name))
    return statement


class MariaDB(server.Server):
    """``protocol.Backend`` on MariaDB (and MySQL)."""

    name = 'mariadb'

    def __init__(self):
        super().__init__(Spelling())

    def prepares(self, dialect):
        return prepared.serves(dialect)

    def insert_adding(self, table, key, added, touched):
        statement = mysql.insert(table)
        return statement.on_duplicate_key_update(
            {added: table.c[added] + statement.inserted[added],
             **{column: statement.inserted[source]
                for column, source in touched.items()}})

    def through_index(self, select, table, index):
        return force_index(select, index, table)

    def as_written(self, select):
        for name in DIALECT_NAMES:
            select = select.prefix_with('STRAIGHT_JOIN', dialect=name)
        return select


MARIADB = MariaDB()
