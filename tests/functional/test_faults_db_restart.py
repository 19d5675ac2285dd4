"""The database server restarted under load, on a private PostgreSQL and a
private MariaDB (tests/functional/private_servers.py).

Worker processes reserve, commit, roll back and release through the
ledger while this process stops the server, keeps it down for a few
seconds and starts it again. A call that cannot reach the server fails
within its retry budget with oslo.db's connection error (no hang, no
other error); no call that begins once the server is back fails; the
workers carry on through the same engines (no restart); and afterwards the
books balance and hold what each worker was told.
"""

import collections
import multiprocessing
import random
import time
import traceback

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.functional import ledger_books

WORKERS = 2
PROJECTS = ('restart-a', 'restart-b')
LIMIT = 3
#: Seconds of load before the stop, of outage, and of load after the start.
BEFORE, OUTAGE, AFTER = 1.5, 2.0, 1.5
#: A worker stops by itself after this long, whatever the test says.
LONGEST_RUN = 90
#: A worker's retry budget for one call: about a second of retries, so
#: that calls during the outage fail (and are seen to fail cleanly).
DB_RETRIES = 4
#: No call may take longer than this, outage or not.
CALL_BOUND = 10.0
SPAWN = multiprocessing.get_context('spawn')


_events = None


def _setup(url, start, events):
    global _events
    _events = events
    CONF([], project='cyquota', default_config_files=[])
    CONF.set_override('db_max_retries', DB_RETRIES, 'quota')
    fixtures.use_database(url, migrate=False)
    # Connect before the load begins: oslo.db's first connection waits
    # out an outage (``[database] max_retries``), unlike a retried call.
    QUOTAS.get_project_usage(cyquota_context.get_admin_context(),
                             PROJECTS[0])
    start.wait(timeout=120)


class Worker:
    """Attach flows of one process, each call timed and its outcome kept:
    reserve with a request id, then commit or roll back (both repeated
    until answered, as they are safe to repeat), sometimes release."""

    def __init__(self, number, events):
        self.name = 'worker-%d' % number
        self.rng = random.Random(number)
        self.stop, self.quiet, self.resume = events
        # Every other worker sits out the outage, its pooled connection
        # dying unused: its first call after the restart meets it.
        self.sits_out = number % 2 == 1
        self.until = time.monotonic() + LONGEST_RUN
        self.ctx = cyquota_context.get_admin_context()
        self.calls = []  # (operation, began, seconds, error or None)
        self.outcomes = {}  # uuid: status
        self.held = collections.Counter()
        self.released = self.unconfirmed = 0
        self.unexpected = []

    def _call(self, operation, *args, **kwargs):
        began = time.monotonic()
        error = None
        try:
            return getattr(QUOTAS, operation)(self.ctx, *args, **kwargs)
        except (db_exc.DBConnectionError, exception.OverQuota) as caught:
            error = caught
            raise
        except Exception as caught:
            error = caught
            self.unexpected.append(traceback.format_exc())
            raise
        finally:
            self.calls.append((operation, began, time.monotonic() - began,
                               type(error).__name__ if error else None))

    def _until_answered(self, operation, *args, **kwargs):
        while time.monotonic() < self.until:
            try:
                return self._call(operation, *args, **kwargs)
            except db_exc.DBConnectionError:
                time.sleep(0.1)
        raise AssertionError('%s never answered' % operation)

    def run(self):
        n = 0
        while not self.stop.is_set() and time.monotonic() < self.until:
            if self.sits_out and self.quiet.is_set():
                self.resume.wait(LONGEST_RUN)
                self.sits_out = False
            n += 1
            project = self.rng.choice(PROJECTS)
            if self.held[project] and self.rng.random() < 0.4:
                self.release(project)
                continue
            try:
                uuids = self._until_answered(
                    'reserve', project, {'FPGA': 1}, expire=600,
                    request_id='%s-%d' % (self.name, n),
                    consumer_id=self.name)
            except exception.OverQuota:
                continue
            if self.rng.random() < 0.6:
                self._until_answered('commit', project, uuids)
                self.outcomes.update(dict.fromkeys(uuids, models.COMMITTED))
                self.held[project] += 1
            else:
                self._until_answered('rollback', project, uuids)
                self.outcomes.update(dict.fromkeys(uuids,
                                                   models.ROLLED_BACK))
        return self.__dict__

    def release(self, project):
        # Not safe to repeat: a release whose answer was lost may or may
        # not have happened.
        self.held[project] -= 1
        try:
            uuids = self._call('release', project, {'FPGA': 1},
                               consumer_id=self.name)
        except db_exc.DBConnectionError:
            self.unconfirmed += 1
            return
        self.outcomes.update(dict.fromkeys(uuids, models.COMMITTED))
        self.released += 1


def _work(number):
    result = Worker(number, _events).run()
    for name in ('rng', 'ctx', 'stop', 'quiet', 'resume'):
        result.pop(name)
    return result


def _poll(observations):
    query = sa.text('SELECT project_id, resource, used, reserved '
                    'FROM quota_usages')
    try:
        with db_api.get_engine().connect() as conn:
            observations += [(p, r, LIMIT, u, n)
                             for p, r, u, n in conn.execute(query)]
    except db_exc.DBConnectionError:
        pass  # the server is down: nothing to observe


def _load_while(restart, db_url):
    """Run the workers; ``restart()`` once they are under way. Returns the
    workers' results, the poller's observations and when the server was
    down ``(stopped, back)`` on the monotonic clock."""
    start = SPAWN.Barrier(WORKERS + 1)
    stop, quiet, resume = SPAWN.Event(), SPAWN.Event(), SPAWN.Event()
    observations = []

    def poll(seconds):
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            _poll(observations)
            time.sleep(0.02)

    with SPAWN.Pool(WORKERS, _setup,
                    (db_url, start, (stop, quiet, resume))) as pool:
        start.wait(timeout=120)
        run = pool.map_async(_work, range(WORKERS), chunksize=1)
        try:
            poll(BEFORE)
            quiet.set()
            time.sleep(0.3)  # the call under way ends
            stopped, back = restart()
            resume.set()
            poll(AFTER)
        finally:
            stop.set()
            resume.set()
        return run.get(timeout=LONGEST_RUN), observations, (stopped, back)


def test_server_restart_mid_load_is_survived(private_server, private_db,
                                             ctx):
    for project in PROJECTS:
        QUOTAS.limits.set_project_limit(ctx, project, 'FPGA', LIMIT)

    def restart():
        stopped = time.monotonic()
        private_server.stop()
        time.sleep(OUTAGE)
        try:
            private_server.start()
        finally:
            back = time.monotonic()
        return stopped, back

    results, observations, (stopped, back) = _load_while(restart, private_db)

    calls = [c for r in results for c in r['calls']]
    failed = [c for c in calls if c[3] == 'DBConnectionError']
    print('%s: %d calls, %d failed during the outage, %d observations' % (
        private_server.backend, len(calls), len(failed), len(observations)))
    assert [r['unexpected'] for r in results] == [[]] * WORKERS
    # Failures are clean, quick, and only while the server was away.
    assert failed, 'no call met the outage'
    assert max(c[2] for c in calls) < CALL_BOUND
    assert [c for c in failed if c[1] > back] == []
    # The workers kept going once it was back, on the same engines.
    assert len([c for c in calls if c[1] > back and c[3] is None]) >= WORKERS

    # The service answers this process too, without a restart.
    QUOTAS.get_project_usage(ctx, PROJECTS[0])

    assert observations
    assert ledger_books.over_limit(observations) == []
    rows = ledger_books.assert_books_balance(
        {(p, 'FPGA'): LIMIT for p in PROJECTS})
    # Every reservation a worker was answered is there in the state it was
    # told; the only others are releases whose answer was lost.
    outcomes = {}
    for result in results:
        outcomes.update(result['outcomes'])
    assert {u: rows[u]['status'] for u in outcomes} == outcomes
    unknown = [rows[u] for u in set(rows) - set(outcomes)]
    assert all(r['delta'] < 0 for r in unknown), unknown
    assert len(unknown) <= sum(r['unconfirmed'] for r in results)
    assert [r for r in rows.values() if r['status'] == models.RESERVED] == []
