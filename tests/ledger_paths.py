"""The ledger's paths, and the one place where a test forces one.

The ledger changes the books by one of three paths, chosen per call:

* ``fastest``: what the server does best: PostgreSQL's CTE chains and
  MariaDB's compound blocks, each a transaction of its own
  (``ledger.one_statement``), SQLite's batches, upserts and
  ``UPDATE ... RETURNING``;
* ``step by step``: the portable form (``cyquota.db.backends.portable``),
  one conditional statement a step in a transaction;
* ``locked``: the usage rows locked and read, the path that explains a
  refusal and serves the models whose rule spans more than the
  project's row.

Unforced, each call takes the fastest path its server has and falls back
to the next when that one cannot decide; forced, the faster ones are out
of the ledger's reach, so the slower one decides every call.
"""

from cyquota.db import backends
from cyquota.quota.limits import flat

FASTEST = 'fastest'
STEP_BY_STEP = 'step by step'
LOCKED = 'locked'
#: Every path, fastest first.
PATHS = (FASTEST, STEP_BY_STEP, LOCKED)


def force(monkeypatch, path):
    """Make the ledger take ``path`` (and the slower ones where it cannot
    decide) for the rest of the test, undone by ``monkeypatch``."""
    if path == FASTEST:
        return
    # The backends' documented seam: the plain steps, in the server's
    # own spelling.
    monkeypatch.setattr(backends, 'of', backends.step_by_step)
    if path == LOCKED:
        # The flat model's own row no longer decides: every reserve and
        # end locks and reads the rows.
        monkeypatch.setattr(flat.FlatModel, 'decides_by_own_row', False)
    else:
        assert path == STEP_BY_STEP, path
