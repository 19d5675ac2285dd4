"""Several conductors on one database, and a conductor killed mid-run,
with real processes on the real RabbitMQ and PostgreSQL (MariaDB too for
the concurrent expiry)."""

import datetime
import json
import multiprocessing
import subprocess
import threading
import time

import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import quota
from cyquota.quota import attachments
from cyquota.quota import repair
import simulators
from tests import fixtures

_usages = models.QuotaUsage.__table__
_reservations = models.Reservation.__table__
_drift = models.DriftEvent.__table__

LIMIT = 6


def _expire_in_child(url, start, results):
    fixtures.start_worker(url)
    CONF.set_override('batch_size', 7, 'quota')
    start.wait()
    results.put(quota.QUOTAS.expire(cyquota_context.get_admin_context()))


def test_concurrent_expiry_expires_each_reservation_once(backend, db_url,
                                                         ctx):
    expired = []
    for n in range(8):
        for _ in range(10):
            expired += quota.QUOTAS.reserve(ctx, 'p%d' % n,
                                            {'FPGA': 1, 'GPU': 2})
        quota.QUOTAS.reserve(ctx, 'p%d' % n, {'FPGA': 1}, expire=3600)
    with db_api.get_engine().begin() as conn:
        conn.execute(_reservations.update()
                     .where(_reservations.c.uuid.in_(expired))
                     .values(expire=models.utcnow()
                             - datetime.timedelta(minutes=1)))
    spawn = multiprocessing.get_context('spawn')
    # The children go at once, when every one has imported and set up.
    start, results = spawn.Barrier(4, timeout=120), spawn.Queue()
    children = [spawn.Process(target=_expire_in_child,
                              args=(db_url, start, results))
                for _ in range(4)]
    for child in children:
        child.start()
    counts = [results.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=60)
        assert child.exitcode == 0
    assert sum(counts) == len(expired) == 160
    with db_api.get_engine().connect() as conn:
        statuses = dict(conn.execute(
            sa.select(_reservations.c.status, sa.func.count())
            .group_by(_reservations.c.status)).all())
        usages = conn.execute(sa.select(_usages.c.resource, _usages.c.used,
                                        _usages.c.reserved)).all()
        drift = conn.execute(sa.select(sa.func.count())
                             .select_from(_drift)).scalar()
    assert statuses == {'expired': 160, 'reserved': 8}
    assert sorted(set(usages)) == [('FPGA', 0, 1), ('GPU', 0, 0)]
    assert drift == 0


def _report_in_child(url, worker, start, results):
    fixtures.start_worker(url)
    context = cyquota_context.get_admin_context()
    report = [{'project_id': 'p1', 'resource': 'FPGA',
               'consumer_id': 'w%d-c%d' % (worker, n), 'amount': worker + 1}
              for n in range(5)]
    start.wait()
    for _ in range(20):
        attachments.record_report(context, 'h1', report)
    results.put(worker)


def test_concurrent_reports_of_one_host_never_mix(backend, db_url, ctx):
    spawn = multiprocessing.get_context('spawn')
    # The children go at once, when every one has imported and set up.
    start, results = spawn.Barrier(4, timeout=120), spawn.Queue()
    children = [spawn.Process(target=_report_in_child,
                              args=(db_url, worker, start, results))
                for worker in range(4)]
    for child in children:
        child.start()
    assert sorted(results.get(timeout=120) for _ in children) == [0, 1, 2, 3]
    for child in children:
        child.join(timeout=60)
        assert child.exitcode == 0
    stored = attachments.reported_consumer_usage(ctx)
    winner = int(next(iter(stored))[2][1])
    assert stored == {('p1', 'FPGA', 'w%d-c%d' % (winner, n)): winner + 1
                      for n in range(5)}
    assert list(attachments.host_reports(ctx)) == ['h1']


class _LimitWatch:
    """Reads every project's counts while the run goes on and keeps what
    broke the limit (a committed state with used + reserved > LIMIT)."""

    def __init__(self):
        self.breaches = []
        self.reads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch)

    def _watch(self):
        while not self._stop.wait(0.02):
            with db_api.get_engine().connect() as conn:
                for row in conn.execute(sa.select(
                        _usages.c.project_id, _usages.c.used,
                        _usages.c.reserved)):
                    if row.used + row.reserved > LIMIT:
                        self.breaches.append(tuple(row))
            self.reads += 1

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


def _simulator(rabbit, tmp_path, db_url, *args):
    """Start the agent simulator; its progress goes to a file."""
    config = tmp_path / 'agent-sim.conf'
    config.write_text(rabbit.config(db_url))
    summary = tmp_path / 'summary.json'
    progress = (tmp_path / 'agent-sim.err').open('w')
    process = subprocess.Popen(
        [*simulators.AGENT_SIM, '--config-file', str(config),
         '--projects', '3', '--workers', '4', '--timeout', '5',
         '--norelease-at-end', '--summary-json', str(summary), *args],
        stdout=subprocess.DEVNULL, stderr=progress)
    process.summary = summary
    process.progress = tmp_path / 'agent-sim.err'
    return process


def _done_iterations(process):
    done = [int(line.split()[1].split('/')[0])
            for line in process.progress.read_text().splitlines()
            if line.startswith('progress: ')]
    return max(done, default=0)


def _with_status(status):
    with db_api.get_engine().connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(
            _reservations).where(_reservations.c.status == status)).scalar()


def _wait_for_no_reservations(timeout=60):
    deadline = time.monotonic() + timeout
    while _with_status('reserved'):
        assert time.monotonic() < deadline, 'reservations did not expire'
        time.sleep(0.5)


def _assert_books_balance(ctx, summary):
    """After the run: nothing reserved, every count equals its reservation
    rows and the agent's holdings, and the agent's report is stored."""
    with db_api.get_engine().connect() as conn:
        committed = dict(conn.execute(
            sa.select(_reservations.c.project_id,
                      sa.func.sum(_reservations.c.delta))
            .where(_reservations.c.status == 'committed')
            .group_by(_reservations.c.project_id)).all())
        usages = {r.project_id: r for r in conn.execute(
            sa.select(_usages).where(_usages.c.resource == 'FPGA'))}
    assert repair.find_drift(ctx) == []
    reported = attachments.reported_usage(ctx)
    for project, counts in summary['projects'].items():
        assert counts['errors'] == 0
        usage = usages[project]
        assert usage.reserved == 0
        assert usage.used == committed.get(project, 0)
        assert usage.used + usage.reserved <= LIMIT
        # A release whose answer was lost may or may not have happened.
        assert (counts['held'] <= usage.used
                <= counts['held'] + counts['release_unconfirmed_amount'])
        assert reported.get((project, 'FPGA'), 0) == counts['held']


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_two_conductors_serve_one_topic(conductors, rabbit, tmp_path,
                                        db_url, ctx):
    # oslo.messaging's debug log names the method of every request served.
    settings = dict(DEFAULT={'debug': 'true', 'default_log_levels':
                             'oslo_messaging=DEBUG,amqp=WARN'},
                    conductor={'expire_interval': 1},
                    quota={'default_limit': LIMIT})
    first = conductors('conductor-1', **settings)
    second = conductors('conductor-2', **settings)
    with _LimitWatch() as watch:
        sim = _simulator(rabbit, tmp_path, db_url, '--iterations', '200',
                         '--crash-rate', '0.1', '--expire', '2')
        assert sim.wait(timeout=600) == 0
        _wait_for_no_reservations()
    assert watch.reads and watch.breaches == []
    summary = json.loads(sim.summary.read_text())
    _assert_books_balance(ctx, summary)
    counts = summary['projects'].values()
    crashed = sum(c['crashed'] for c in counts)
    assert crashed > 0
    assert _with_status('expired') == crashed + sum(
        c['expired_before_commit'] for c in counts)
    assert repair.unresolved_events(ctx) == []
    for conductor in (first, second):
        assert conductor.stop() == 0
        served = conductor.log.read_text().count('and method: reserve')
        assert served > 0, '%s served no reserve' % conductor.host


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_conductor_killed_mid_run_loses_nothing(conductors, rabbit,
                                                tmp_path, db_url, ctx):
    conductor = conductors('conductor-1', conductor={'expire_interval': 1},
                           quota={'default_limit': LIMIT})
    iterations = 1500
    with _LimitWatch() as watch:
        sim = _simulator(rabbit, tmp_path, db_url, '--iterations',
                         str(iterations), '--crash-rate', '0.05',
                         '--expire', '3')
        deadline = time.monotonic() + 120
        while _done_iterations(sim) < iterations // 10:
            assert sim.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        conductor.kill()
        assert sim.poll() is None, 'the agent finished before the kill'
        time.sleep(1)
        conductor.start()
        assert sim.wait(timeout=600) == 0
        _wait_for_no_reservations()
    assert watch.reads and watch.breaches == []
    summary = json.loads(sim.summary.read_text())
    _assert_books_balance(ctx, summary)
    assert summary['iterations'] == iterations
    assert conductor.stop() == 0
