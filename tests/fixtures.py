"""Test helpers shared by unit and functional tests: point cyquota at a
database, create or drop a throw-away database on a real server (both from
``benchmarks.support``, which the benchmarks use too), and empty the
tables between tests, and watch the SQL statements sent."""

import contextlib

import sqlalchemy as sa

from benchmarks import support
from cyquota.db import api as db_api
from cyquota.db import attachment_models  # noqa: F401 (registers tables)
from cyquota.db import lease_models  # noqa: F401 (registers tables)
from cyquota.db import models
from cyquota.db import placement_models  # noqa: F401 (registers tables)

SERVERS = support.SERVERS
use_database = support.use_database
create_database = support.create_database
drop_database = support.drop_database


def clear_tables():
    """Empty every cyquota table (children before parents)."""
    with db_api.get_engine().begin() as conn:
        for table in reversed(models.Base.metadata.sorted_tables):
            conn.execute(table.delete())


@contextlib.contextmanager
def statements_sent(engine=None):
    """Yield a list that fills with the SQL text of every statement sent
    on ``engine`` (cyquota's engine when None) inside the block."""
    engine = engine or db_api.get_engine()
    sent = []

    def seen(conn, cursor, statement, *args):
        sent.append(statement)
    sa.event.listen(engine, 'before_cursor_execute', seen)
    try:
        yield sent
    finally:
        sa.event.remove(engine, 'before_cursor_execute', seen)
