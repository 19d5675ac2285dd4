"""PostgreSQL's backend: the ledger's one statements (its statements
prepared), UPDATE ... RETURNING, and ``INSERT ... ON CONFLICT DO
UPDATE``. Its planner needs no hint, and it spells everything as
standard SQL does."""

from sqlalchemy.dialects import postgresql

from cyquota.db.backends import server
from cyquota.db import prepared


class PostgreSQL(server.Server):
    """``protocol.Backend`` on PostgreSQL."""

    name = 'postgresql'

    def prepares(self, dialect):
        return prepared.serves(dialect)

    def insert_adding(self, table, key, added, touched):
        return server.on_conflict_adding(postgresql.insert, table, key,
                                         added, touched)


POSTGRESQL = PostgreSQL()
