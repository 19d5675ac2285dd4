"""The ledger's paths, and the one place where a test forces one.

The ledger changes the books by one of three paths, chosen per call:

* ``one statement``: PostgreSQL's CTE chains and MariaDB's compound
  blocks, each a transaction of its own (``ledger.one_statement``);
* ``step by step``: the portable form, one conditional statement a step
  in a transaction (SQLite's batches where the driver counts them);
* ``locked``: the usage rows locked and read, the path that explains a
  refusal and serves the models whose rule spans more than the
  project's row.

Unforced, each call takes the fastest path its server has and falls back
to the next when that one cannot decide; forced, the faster ones are out
of the ledger's reach, so the slower one decides every call.
"""

from cyquota.db import api as db_api
from cyquota.quota.ledger import one_statement
from cyquota.quota.limits import flat

ONE_STATEMENT = 'one statement'
STEP_BY_STEP = 'step by step'
LOCKED = 'locked'
#: Every path, fastest first.
PATHS = (ONE_STATEMENT, STEP_BY_STEP, LOCKED)
#: The paths of a server without one statements (SQLite).
PORTABLE = (STEP_BY_STEP, LOCKED)


def force(monkeypatch, path):
    """Make the ledger take ``path`` (and the slower ones where it cannot
    decide) for the rest of the test, undone by ``monkeypatch``."""
    if path == ONE_STATEMENT:
        assert one_statement.available_on(db_api.get_engine().dialect)
        return
    # Step by step: no call runs alone.
    monkeypatch.setattr(one_statement, 'runs_alone', lambda context: False)
    if path == LOCKED:
        # The flat model's own row no longer decides: every reserve and
        # end locks and reads the rows.
        monkeypatch.setattr(flat.FlatModel, 'decides_by_own_row', False)
    else:
        assert path == STEP_BY_STEP, path
