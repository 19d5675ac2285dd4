"""Ledger benchmark: reserve and commit operations per
second against the raw rate of a hot-row ``UPDATE hot SET n = n + 1;
COMMIT`` on the same database.

For every backend (SQLite file, PostgreSQL, MariaDB: throw-away databases)
and every worker count, one set of spawned worker processes runs timed
phases in lock step, repeated for several rounds so that the machine's
drift touches all alike: raw (the UPDATE on the driver's own connection),
oslo_db (the same UPDATE in an oslo.db writer transaction, the floor of any
ledger transaction), reserve, commit. Every operation is one transaction;
all workers use one project and resource, the ledger's hot row. Afterwards
the books are checked against what the workers did.
"""

import collections
import contextlib
import multiprocessing
import queue
import re
import threading
import time
import traceback

import sqlalchemy as sa

import benchmarks
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import quota

TITLE = 'Ledger: operations per second, each one transaction, one hot row'
COLUMNS = [
    ('backend', 'backend', '{}'),
    ('workers', 'workers', '{}'),
    ('raw', 'raw UPDATE;COMMIT/s', '{:.0f}'),
    ('oslo_db', 'same via oslo.db/s', '{:.0f}'),
    ('reserve', 'reserve/s', '{:.0f}'),
    ('commit', 'commit/s', '{:.0f}'),
    ('oslo_db_ratio', 'oslo.db/raw', '{:.2f}'),
    ('reserve_ratio', 'reserve/raw', '{:.2f}'),
    ('commit_ratio', 'commit/raw', '{:.2f}'),
    ('retries', 'db errors (retried)', '{}'),
    ('check', 'books after the run', '{}'),
]
WORKERS = (1, 8)
#: The target of reserve/raw and commit/raw with one worker: the ledger's
#: bookkeeping may cost at most as much again as the durable counter under
#: it.
TARGET = 0.5
RESOURCE = 'FPGA'
PHASES = ('raw', 'oslo_db', 'reserve', 'commit')
RAW_UPDATE = 'UPDATE hot SET n = n + 1'
# Spawning and importing eight workers on a busy machine can take a while.
_BARRIER_TIMEOUT = 300

#: The one-row table of the raw durable counter.
HOT = sa.Table('hot', sa.MetaData(),
               sa.Column('id', sa.Integer, primary_key=True,
                         autoincrement=False),
               sa.Column('n', sa.Integer, nullable=False),
               mysql_engine='InnoDB')


def run(args, progress):
    """Measure every backend in ``args.backends`` with 1 and 8 workers."""
    # Short phases in many rounds: the machine's drift hits all alike.
    seconds, rounds = (0.2, 2) if args.quick else (0.75, 6)
    rows = []
    for backend, url in benchmarks.databases('ledger', args.backends,
                                             progress, _database):
        if url is None:
            rows.append(dict(benchmarks.UNREACHABLE, backend=backend))
            continue
        for workers in WORKERS:
            rows.append(_measure(backend, url, workers, seconds, rounds,
                                 progress))
    return rows


def summary(rows):
    """Lines under the table: the targets, met or missed."""
    lines = ['target: reserve/raw and commit/raw >= %.2f with 1 worker; '
             'with %d workers books exact and at least the 1-worker rate'
             % (TARGET, max(WORKERS))]
    alone = {row['backend']: row for row in rows
             if 'raw' in row and row['workers'] == 1}
    for row in rows:
        if 'raw' not in row:
            lines.append('  %s, %s workers: no measurement (%s)' % (
                row['backend'], row.get('workers', 'all'), row['check']))
        elif row['workers'] == 1:
            low = ['%s/raw %.2f' % (key, row[key + '_ratio'])
                   for key in ('reserve', 'commit')
                   if row[key + '_ratio'] < TARGET]
            lines.append('  %s, 1 worker: %s' % (
                row['backend'],
                'below target: ' + ', '.join(low) if low else 'target met'))
        else:
            lines.append('  %s, %d workers: books %s; %s' % (
                row['backend'], row['workers'],
                'WRONG' if row['failed'] else 'exact',
                _against_one_worker(row, alone.get(row['backend']))))
    return lines


def _against_one_worker(row, one):
    """The rates of a row of several workers beside the 1-worker row's
    (``one``), raw's too: below or at least."""
    if one is None:
        return 'no 1-worker row to compare with'
    below = [key for key in ('reserve', 'commit') if row[key] < one[key]]
    return ('reserve %.0f/s, commit %.0f/s against %.0f/s, %.0f/s with 1 '
            'worker (raw %.0f/s against %.0f/s): %s' % (
                row['reserve'], row['commit'], one['reserve'],
                one['commit'], row['raw'], one['raw'],
                'below the 1-worker rate (%s)' % ', '.join(below) if below
                else 'at least the 1-worker rate'))


def plot(rows, ax):
    """Reserve/raw and commit/raw per backend and worker count."""
    rows = [row for row in rows if 'raw' in row]
    x = range(len(rows))
    width = 0.27
    for offset, (phase, label) in zip((-width, 0, width), (
            ('oslo_db', 'same UPDATE via oslo.db / raw'),
            ('reserve', 'reserve / raw'), ('commit', 'commit / raw'))):
        ax.bar([i + offset for i in x], [r[phase + '_ratio'] for r in rows],
               width, label=label)
    ax.axhline(TARGET, color='grey', linestyle='--',
               label='target with 1 worker')
    ax.set_xticks(list(x), ['%s\n%d worker%s\nraw %.0f/s' % (
        r['backend'], r['workers'], '' if r['workers'] == 1 else 's',
        r['raw']) for r in rows])
    ax.set_ylim(0, max([TARGET * 1.2] + [
        r[phase + '_ratio'] * 1.1 for r in rows for phase in PHASES[1:]]))
    ax.set_ylabel('rate / raw hot-row UPDATE;COMMIT rate')
    ax.legend()


@contextlib.contextmanager
def _database(backend):
    """A migrated throw-away database with the ``hot`` row, or None when
    the server cannot be reached; dropped afterwards."""
    with benchmarks.throwaway_database(backend) as url:
        if url is not None:
            with db_api.get_engine().begin() as conn:
                HOT.create(conn)
                conn.execute(HOT.insert().values(id=1, n=0))
        yield url


def _measure(backend, url, workers, seconds, rounds, progress):
    """One cell of the table: run the phases in ``workers`` processes."""
    project = 'bench-%d-workers' % workers
    plan = PHASES * rounds
    with db_api.get_engine().begin() as conn:
        conn.execute(HOT.update().values(n=0))
    spawn = multiprocessing.get_context('spawn')
    barrier = spawn.Barrier(workers + 1)
    results = spawn.Queue()
    processes = [spawn.Process(target=_worker, args=(
        url, project, plan, seconds, barrier, results))
        for _ in range(workers)]
    label = 'ledger: %s, %d worker(s)' % (backend, workers)
    progress.step('%s: starting the workers' % label)
    for process in processes:
        process.start()
    reports = []
    try:
        for number, phase in enumerate(plan):
            barrier.wait(_BARRIER_TIMEOUT)
            progress.step('%s: %s, round %d of %d (%.1fs)' % (
                label, phase, number // len(PHASES) + 1, rounds, seconds))
        while len(reports) < workers:
            reports.append(results.get(timeout=_BARRIER_TIMEOUT))
    except (threading.BrokenBarrierError, queue.Empty):
        with contextlib.suppress(queue.Empty):
            while len(reports) < workers:
                reports.append(results.get(timeout=5))
    finally:
        for process in processes:
            process.join(5)
            if process.is_alive():
                process.terminate()
                process.join()
    # The first failure breaks the barrier for the others: show its cause.
    errors = sorted((r['error'] for r in reports if 'error' in r),
                    key=lambda error: 'BrokenBarrierError' in error)
    if errors or len(reports) < workers:
        error = errors[0] if errors else 'a worker died without a report'
        progress.step('%s: failed:\n%s' % (label, error))
        return dict(backend=backend, workers=workers, failed=True,
                    check='worker failed: %s' % _exception_line(error))
    row = dict(backend=backend, workers=workers)
    row.update(_rates(plan, reports))
    errors = collections.Counter()
    for report in reports:
        errors.update(report['errors'])
    row['db_errors'] = dict(errors)
    row['retries'] = sum(errors.values())
    problems, counted = _check_books(project, reports)
    row['check'] = '%s (%s)' % ('; '.join(problems) or 'ok', counted)
    row['failed'] = bool(problems)
    progress.step('%s: %s' % (label, row['check']))
    return row


def _exception_line(trace):
    """The ``module.Error: message`` line of a formatted traceback."""
    lines = trace.strip().splitlines()
    return next((line for line in reversed(lines)
                 if re.match(r'[\w.]+(: |$)', line)), lines[-1])


def _rates(plan, reports):
    """Operations per second of each phase: all workers' operations over
    the wall time of the phase (its slowest worker)."""
    ops = collections.Counter()
    wall = collections.Counter()
    for index, phase in enumerate(plan):
        ops[phase] += sum(r['timings'][index][0] for r in reports)
        wall[phase] += max(r['timings'][index][1] for r in reports)
    rates = {phase: ops[phase] / wall[phase] for phase in PHASES}
    rates.update({phase + '_ratio': rates[phase] / rates['raw']
                  for phase in PHASES[1:]})
    return rates


def _check_books(project, reports):
    """Compare the ledger and the hot row with what the workers did."""
    done = collections.Counter()
    for report in reports:
        done.update(report['done'])
    expected = {'used': done['commit'],
                'reserved': done['reserve'] - done['commit']}
    context = cyquota_context.get_admin_context()
    usage = quota.QUOTAS.get_project_usage(context, project)[RESOURCE]
    reservations = models.Reservation.__table__
    with db_api.get_engine().connect() as conn:
        statuses = dict(conn.execute(
            sa.select(reservations.c.status, sa.func.count())
            .where(reservations.c.project_id == project)
            .group_by(reservations.c.status)).all())
        hot = conn.execute(sa.select(HOT.c.n)).scalar()
    found = {'used': usage['used'], 'reserved': usage['reserved']}
    found_rows = {'used': statuses.get(models.COMMITTED, 0),
                  'reserved': statuses.get(models.RESERVED, 0)}
    problems = ['%s %d, expected %d' % (key, found[key], expected[key])
                for key in expected if found[key] != expected[key]]
    problems += ['%d %s reservation rows, expected %d' % (
        found_rows[key], key, expected[key])
        for key in expected if found_rows[key] != expected[key]]
    if hot != done['raw'] + done['oslo_db']:
        problems.append('hot row %d, expected %d' % (
            hot, done['raw'] + done['oslo_db']))
    return problems, '%d reserved, %d committed' % (done['reserve'],
                                                    done['commit'])


def _timed(operation, seconds, more=lambda: True):
    """Run ``operation`` until ``seconds`` pass or ``more()`` is false;
    returns (count, elapsed)."""
    start = now = time.perf_counter()
    deadline = start + seconds
    count = 0
    while now < deadline and more():
        operation()
        count += 1
        now = time.perf_counter()
    return count, now - start


def _worker(url, project, plan, seconds, barrier, results):
    """A worker process: run ``plan``'s phases, each after a barrier;
    report what it did, or its error."""
    try:
        results.put(_work(url, project, plan, seconds, barrier))
    except BaseException:
        barrier.abort()
        results.put({'error': traceback.format_exc()})


def _work(url, project, plan, seconds, barrier):
    benchmarks.use_database(url)
    context = cyquota_context.get_admin_context()
    # The raw rate uses the same engine, so the same driver and settings.
    engine = db_api.get_engine()
    errors = collections.Counter()
    sa.event.listen(engine, 'handle_error', lambda error: errors.update(
        [type(error.original_exception).__name__]))
    raw = engine.raw_connection()
    cursor = raw.cursor()
    oslo_db_statement = sa.text(RAW_UPDATE)
    pending = collections.deque()

    def raw_update():
        cursor.execute(RAW_UPDATE)
        raw.commit()

    def oslo_db_update():
        with db_api.writer(context) as session:
            session.execute(oslo_db_statement)

    def reserve():
        pending.extend(quota.QUOTAS.reserve(context, project, {RESOURCE: 1}))

    def commit():
        quota.QUOTAS.commit(context, project, [pending.popleft()])

    operations = {'raw': raw_update, 'oslo_db': oslo_db_update,
                  'reserve': reserve, 'commit': commit}
    done = collections.Counter()
    # One untimed operation of each kind connects and warms the caches
    # (and creates the project's usage row); it is counted in the books.
    for phase, operation in operations.items():
        operation()
        done[phase] += 1
    timings = []
    for phase in plan:
        barrier.wait(_BARRIER_TIMEOUT)
        count, elapsed = _timed(operations[phase], seconds,
                                (lambda: pending) if phase == 'commit'
                                else (lambda: True))
        done[phase] += count
        timings.append((count, elapsed))
    raw.close()
    return {'done': dict(done), 'timings': timings, 'errors': dict(errors)}
