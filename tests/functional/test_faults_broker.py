"""The broker connections of an agent and a conductor cut mid-run, on
PostgreSQL and MariaDB.

The shared RabbitMQ is never stopped (other runs use it): the test closes
only its own processes' connections, found by the ``connection_name``
oslo.messaging gives each (``<program>:<pid>:<uuid>``), with
``rabbitmqctl close_connection``, while the agent simulator
attaches over RPC to a ``cyquota-conductor``. Both reconnect by
themselves: the agent finishes every iteration without an error, and the
books balance (tests/functional/test_rpc_conductors.py's checks).
"""

import json
import shutil
import signal
import subprocess
import time

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models
from tests.functional import private_servers
from tests.functional.test_rpc_conductors import (
    _assert_books_balance,  # noqa: H301
    _done_iterations, _LimitWatch, _simulator, _wait_for_no_reservations,
    LIMIT)

ITERATIONS = 100
_reservations = models.Reservation.__table__
RABBITMQCTL_TIMEOUT = 30


def _connections_of(pids):
    """The broker's connection ids of processes ``pids``."""
    listed = subprocess.run(
        ['rabbitmqctl', '-q', '--no-table-headers', 'list_connections',
         'pid', 'client_properties'], check=True, capture_output=True,
        text=True, timeout=RABBITMQCTL_TIMEOUT).stdout
    marks = [':%d:' % pid for pid in pids]
    return [line.split('\t', 1)[0] for line in listed.splitlines()
            if any(mark in line for mark in marks)]


def _cut(pids):
    """Close every broker connection of ``pids`` (at once: each rabbitmqctl
    takes seconds to start); returns how many."""
    closing = [subprocess.Popen(['rabbitmqctl', '-q', 'close_connection',
                                 connection, 'cyquota fault test'],
                                stdout=subprocess.DEVNULL)
               for connection in _connections_of(pids)]
    for process in closing:
        assert process.wait(timeout=RABBITMQCTL_TIMEOUT) == 0
    return len(closing)


def _wait_for_iterations(sim, done, timeout=120):
    """Until the agent reports ``done`` iterations (it reports once a
    second)."""
    deadline = time.monotonic() + timeout
    while _done_iterations(sim) < done:
        assert sim.poll() is None, 'the agent stopped'
        assert time.monotonic() < deadline, 'the agent made no progress'
        time.sleep(0.05)


def _wait_for_reserves(sim, count, timeout=120):
    """Until the agent has made ``count`` reservations: sooner than its
    once-a-second report, so that a fast agent is caught early in its
    run."""
    deadline = time.monotonic() + timeout
    while True:
        with db_api.get_engine().connect() as conn:
            if conn.execute(sa.select(sa.func.count()).select_from(
                    _reservations)).scalar() >= count:
                return
        assert sim.poll() is None, 'the agent stopped'
        assert time.monotonic() < deadline, 'the agent made no progress'
        time.sleep(0.01)


def test_broker_connections_cut_mid_run(conductors, rabbit, tmp_path,
                                        db_url, ctx):
    if shutil.which('rabbitmqctl') is None:
        private_servers.unavailable('rabbitmqctl not found')
    conductor = conductors('conductor-1', conductor={'expire_interval': 1},
                           quota={'default_limit': LIMIT})
    with _LimitWatch() as watch:
        sim = _simulator(rabbit, tmp_path, db_url, '--iterations',
                         str(ITERATIONS), '--crash-rate', '0.05',
                         '--expire', '3')
        _wait_for_reserves(sim, 3)
        # Held still while its connections go, so that the cut lands mid-run
        # however fast the machine is; it finds them gone as it resumes.
        sim.send_signal(signal.SIGSTOP)
        try:
            assert _done_iterations(sim) < ITERATIONS, 'the agent was done'
            assert _cut([conductor.process.pid, sim.pid]) >= 2
        finally:
            sim.send_signal(signal.SIGCONT)
        assert sim.wait(timeout=300) == 0
        _wait_for_no_reservations()
    assert watch.reads and watch.breaches == []
    summary = json.loads(sim.summary.read_text())
    assert summary['iterations'] == ITERATIONS
    _assert_books_balance(ctx, summary)
    # The conductor serves again on its reconnected connection.
    assert rabbit.wait_for_server('conductor-1', timeout=30)
    assert conductor.stop() == 0
