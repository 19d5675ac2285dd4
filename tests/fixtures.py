"""Test helpers shared by unit and functional tests: point cyquota at a
database, create or drop a throw-away database on a real server (both from
``benchmarks.support``, which the benchmarks use too), and empty the
tables between tests."""

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
