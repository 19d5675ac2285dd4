"""An agent killed mid-attach (SIGKILL), on PostgreSQL and MariaDB.

The agent simulator (``simulators/agent_sim.py``) attaches over RPC to a
``cyquota-conductor`` and is killed with reservations in flight. The
conductor's periodic expiry gives them back: afterwards nothing is left
reserved, the reservations the agent held are expired (or committed, when
its commit had already reached the conductor; without the expiry the test
times out waiting), no observation broke the limit and the counts equal
the rows.
"""

import collections
import signal
import time

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models
from tests.functional import ledger_books
from tests.functional.test_faults_broker import _wait_for_iterations
from tests.functional.test_rpc_conductors import (
    _LimitWatch, _simulator, _wait_for_no_reservations, LIMIT)  # noqa: H301

ITERATIONS = 2000  # never reached: the agent is killed long before
_reservations = models.Reservation.__table__


def _held():
    with db_api.get_engine().connect() as conn:
        return set(conn.execute(
            sa.select(_reservations.c.uuid).where(
                _reservations.c.status == models.RESERVED)).scalars())


def _wait_until_settled():
    # A reserve the agent sent just before it died may reach the conductor
    # after the last held row expired: settled is nothing reserved twice,
    # a second apart.
    while True:
        _wait_for_no_reservations()
        time.sleep(1)
        if not _held():
            return


def _stop_holding(sim, tries=200):
    """Stop the agent at a moment it holds reservations (it is stopped
    first, so the attaches it has under way are the ones it dies with);
    returns their uuids."""
    for _ in range(tries):
        sim.send_signal(signal.SIGSTOP)
        held = _held()
        if held:
            return held
        sim.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    return set()


def test_agent_killed_mid_attach_loses_nothing(conductors, rabbit, tmp_path,
                                               db_url, ctx):
    conductors('conductor-1', conductor={'expire_interval': 1},
               quota={'default_limit': LIMIT})
    with _LimitWatch() as watch:
        sim = _simulator(rabbit, tmp_path, db_url, '--iterations',
                         str(ITERATIONS), '--crash-rate', '0',
                         '--attach-failure-rate', '0',
                         '--expire', '2', '--workers', '8')
        try:
            _wait_for_iterations(sim, 30)
            in_flight = _stop_holding(sim)
        finally:
            sim.kill()
            sim.wait()
        _wait_until_settled()
    assert in_flight, 'no attach was under way at the kill'
    assert watch.reads and watch.breaches == []
    statuses = {row['uuid']: row['status']
                for row in ledger_books.table('reservations')}
    print('held at the kill: %s' % collections.Counter(
        statuses[uuid] for uuid in in_flight))
    # Its attaches never fail and it never crashes by itself: each
    # reservation it held was committed (the commit had reached the
    # conductor) or given back by the expiry.
    assert {statuses[uuid] for uuid in in_flight} <= {models.EXPIRED,
                                                      models.COMMITTED}
    rows = ledger_books.assert_books_balance(
        collections.defaultdict(lambda: LIMIT))
    assert models.RESERVED not in {row['status'] for row in rows.values()}
