"""What the lease benchmarks share: lease rows counted and forgotten in
bulk, and the percentiles of their timings."""

import statistics

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import placement_models

#: Lease ids deleted per statement.
_PURGED_AT_ONCE = 500


def percentiles(timings):
    """``{"p50", "p99"}`` of ``timings`` (milliseconds)."""
    times = sorted(timings)
    return dict(p50=statistics.median(times),
                p99=times[min(len(times) - 1, int(len(times) * 0.99))])


def purge(lease_ids):
    """Forget the rows of ended leases, so that a calendar or a history
    keeps its size."""
    lease_ids = list(lease_ids)
    tables = (placement_models.LeaseAllocation.__table__,
              lease_models.LeaseReservation.__table__)
    leases_table = lease_models.Lease.__table__
    with db_api.get_engine().begin() as conn:
        for first in range(0, len(lease_ids), _PURGED_AT_ONCE):
            chunk = lease_ids[first:first + _PURGED_AT_ONCE]
            for table in tables:
                conn.execute(table.delete().where(
                    table.c.lease_id.in_(chunk)))
            conn.execute(leases_table.delete().where(
                leases_table.c.id.in_(chunk)))


def count(table, **where):
    """The rows of ``table`` whose columns hold the values ``where``
    names."""
    with db_api.get_engine().connect() as conn:
        query = sa.select(sa.func.count()).select_from(table)
        for column, value in where.items():
            query = query.where(table.c[column] == value)
        return conn.execute(query).scalar()


class Statements:
    """Counts the statements sent on cyquota's engine of the moment (as
    ``tests.fixtures.statements_sent`` watches them), but a ``PREPARE``:
    a connection prepares a statement once, the first time it runs it
    (``cyquota.db.prepared``), and that run is counted. ``autocommit``:
    its autocommit engine too, where PostgreSQL and MariaDB run the
    ledger's one-statement reserve and commit. ``listen`` again after
    pointing cyquota at another database."""

    def __init__(self, autocommit=False):
        self.sent = 0
        self._autocommit = autocommit
        self._engines = []

    def _seen(self, conn, cursor, statement, *args):
        if not statement.startswith('PREPARE '):
            self.sent += 1

    def listen(self):
        """Watch cyquota's engines of the moment (and no other)."""
        self.stop()
        self._engines = [db_api.get_engine()]
        if self._autocommit:
            self._engines.append(db_api.get_autocommit_engine())
        for engine in self._engines:
            sa.event.listen(engine, 'before_cursor_execute', self._seen)

    def stop(self):
        for engine in self._engines:
            sa.event.remove(engine, 'before_cursor_execute', self._seen)
        self._engines = []
