"""SQLite's backend: batches whose rows its driver counts, UPDATE ...
RETURNING, ``INSERT ... ON CONFLICT DO UPDATE``; no one statement (the
conditional path runs in the transaction that holds the database). It
has no ``mod()`` nor ``floor()`` (but for a build with its math
functions): ``Spelling`` writes them otherwise."""

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from cyquota.db.backends import portable
from cyquota.db.backends import server


class Spelling(portable.Spelling):
    """SQLite's spelling: ``%``, and a cast for ``floor``."""

    def remainder(self, dividend, divisor):
        return dividend % divisor

    def whole(self, number):
        # A cast truncates as floor does what is not negative.
        return sa.cast(number, sa.Integer)


class SQLite(server.Server):
    """``protocol.Backend`` on SQLite."""

    name = 'sqlite'

    def __init__(self):
        super().__init__(Spelling())

    def insert_adding(self, table, key, added, touched):
        return server.on_conflict_adding(sqlite.insert, table, key, added,
                                         touched)


SQLITE = SQLite()
