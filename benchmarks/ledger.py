"""Ledger benchmark: reserve and commit operations per
second against the raw rate of a hot-row ``UPDATE hot SET n = n + 1;
COMMIT`` on the same database, of one resource and of two at once.

For every backend (SQLite file, PostgreSQL, MariaDB: throw-away databases)
and every worker count, one set of spawned worker processes runs timed
phases in lock step, repeated for several rounds so that the machine's
drift touches all alike: raw (the UPDATE on the driver's own connection),
oslo_db (the same UPDATE in an oslo.db writer transaction, the floor of any
ledger transaction), reserve and reserve_2 (one resource, two), commit and
commit_2, those of one resource and of two taking turns at going first.
Every operation is one transaction; all workers use one project,
the ledger's hot rows. Afterwards the books are checked against what the
workers did. Each backend and worker count is a row of one resource and a
row of two, which gives the cost of two against one.
"""

import collections
import contextlib
import multiprocessing
import queue
import re
import threading

import sqlalchemy as sa

import benchmarks
from benchmarks import ledger_workers
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import quota

TITLE = ('Ledger: operations per second, each one transaction, one hot row '
         'per resource')
COLUMNS = [
    ('backend', 'backend', '{}'),
    ('workers', 'workers', '{}'),
    ('resources', 'resources', '{}'),
    ('raw', 'raw UPDATE;COMMIT/s', '{:.0f}'),
    ('oslo_db', 'same via oslo.db/s', '{:.0f}'),
    ('reserve', 'reserve/s', '{:.0f}'),
    ('commit', 'commit/s', '{:.0f}'),
    ('oslo_db_ratio', 'oslo.db/raw', '{:.2f}'),
    ('reserve_ratio', 'reserve/raw', '{:.2f}'),
    ('commit_ratio', 'commit/raw', '{:.2f}'),
    ('reserve_cost', 'reserve cost/1 res', '{:.2f}'),
    ('commit_cost', 'commit cost/1 res', '{:.2f}'),
    ('retries', 'db errors (retried)', '{}'),
    ('check', 'books after the run', '{}'),
]
WORKERS = (1, 8)
#: The target of reserve/raw and commit/raw with one worker: the ledger's
#: bookkeeping may cost at most as much again as the durable counter under
#: it.
TARGET = 0.5
#: The target of the cost of a reserve or commit of two resources against
#: one of one resource (the 1-resource rate over the 2-resource rate), with
#: one worker: an attach of an FPGA and a GPU together is one transaction.
TARGET_COST = 1.3
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
            rows.extend(_measure(backend, url, workers, seconds, rounds,
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
        if 'reserve' not in row:
            lines.append('  %s, %s workers: no measurement (%s)' % (
                row['backend'], row.get('workers', 'all'), row['check']))
        elif row.get('resources', 1) > 1:
            continue
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
    return lines + _cost_summary(rows)


def _cost_summary(rows):
    """The lines of the target of two resources against one: each
    backend's, met or NOT met with 1 worker; with more, for reference."""
    lines = ['target: a reserve or commit of %d resources costs at most '
             '%.2fx one of 1 resource (the 1-resource rate over the '
             '%d-resource rate) with 1 worker' % (
                 len(ledger_workers.DELTAS[-1]), TARGET_COST,
                 len(ledger_workers.DELTAS[-1]))]
    several = [row for row in rows if row.get('resources', 1) > 1]
    for backend in dict.fromkeys(row['backend'] for row in rows):
        if not any(row['backend'] == backend for row in several):
            lines.append('  %s: no measurement' % backend)
    for row in several:
        costs = 'reserve %.2fx, commit %.2fx' % (row['reserve_cost'],
                                                 row['commit_cost'])
        if row['workers'] > 1:
            verdict = 'for reference'
        else:
            over = [key for key in ('reserve', 'commit')
                    if row[key + '_cost'] > TARGET_COST]
            verdict = ('NOT met (%s)' % ', '.join(over) if over
                       else 'met')
        lines.append('  %s, %d resources, %d worker%s: %s: %s' % (
            row['backend'], row['resources'], row['workers'],
            '' if row['workers'] == 1 else 's', costs, verdict))
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
    """Reserve/raw and commit/raw per backend, worker count and number of
    resources."""
    rows = [row for row in rows if 'reserve' in row]
    x = range(len(rows))
    width = 0.27
    ratios = ('oslo_db_ratio', 'reserve_ratio', 'commit_ratio')
    for offset, key, label in zip((-width, 0, width), ratios, (
            'same UPDATE via oslo.db / raw', 'reserve / raw',
            'commit / raw')):
        ax.bar([i + offset for i in x], [r.get(key, 0) for r in rows],
               width, label=label)
    ax.axhline(TARGET, color='grey', linestyle='--',
               label='target with 1 worker, 1 resource')
    ax.set_xticks(list(x), ['%s\n%d wkr, %d res' % (
        r['backend'], r['workers'], r.get('resources', 1)) for r in rows],
        fontsize='x-small')
    ax.set_ylim(0, max([TARGET * 1.2] + [
        r.get(key, 0) * 1.1 for r in rows for key in ratios]))
    ax.set_ylabel('rate / raw hot-row UPDATE;COMMIT rate')
    ax.legend()


@contextlib.contextmanager
def _database(backend):
    """A migrated throw-away database with the ``hot`` row, or None when
    the server cannot be reached; dropped afterwards."""
    with benchmarks.throwaway_database(backend) as url:
        if url is not None:
            with db_api.get_engine().begin() as conn:
                ledger_workers.HOT.create(conn)
                conn.execute(ledger_workers.HOT.insert().values(id=1, n=0))
        yield url


def _measure(backend, url, workers, seconds, rounds, progress):
    """One cell of the table: run the phases in ``workers`` processes."""
    project = 'bench-%d-workers' % workers
    plan = [phase for number in range(rounds) for phase in _round(number)]
    with db_api.get_engine().begin() as conn:
        conn.execute(ledger_workers.HOT.update().values(n=0))
    spawn = multiprocessing.get_context('spawn')
    barrier = spawn.Barrier(workers + 1)
    results = spawn.Queue()
    processes = [spawn.Process(target=ledger_workers.worker, args=(
        url, project, plan, seconds, barrier, results))
        for _ in range(workers)]
    label = 'ledger: %s, %d worker(s)' % (backend, workers)
    progress.step('%s: starting the workers' % label)
    for process in processes:
        process.start()
    reports = []
    try:
        for number, phase in enumerate(plan):
            barrier.wait(ledger_workers.BARRIER_TIMEOUT)
            progress.step('%s: %s, round %d of %d (%.1fs)' % (
                label, phase, number // len(ledger_workers.PHASES) + 1,
                rounds, seconds))
        while len(reports) < workers:
            reports.append(
                results.get(timeout=ledger_workers.BARRIER_TIMEOUT))
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
        return [dict(backend=backend, workers=workers, failed=True,
                     check='worker failed: %s' % _exception_line(error))]
    rates = _rates(plan, reports)
    errors = collections.Counter()
    for report in reports:
        errors.update(report['errors'])
    problems, counted = _check_books(project, reports)
    check = '%s (%s)' % ('; '.join(problems) or 'ok', counted)
    progress.step('%s: %s' % (label, check))
    one = dict(backend=backend, workers=workers, resources=1,
               db_errors=dict(errors), retries=sum(errors.values()),
               check=check, failed=bool(problems),
               **{key: rates[key] for key in (
                   'raw', 'oslo_db', 'reserve', 'commit', 'oslo_db_ratio',
                   'reserve_ratio', 'commit_ratio')})
    two = dict(backend=backend, workers=workers,
               resources=len(ledger_workers.DELTAS[-1]), check=check,
               failed=bool(problems))
    for key in ('reserve', 'commit'):
        two[key] = rates[key + '_2']
        two[key + '_ratio'] = rates[key + '_2_ratio']
        two[key + '_cost'] = rates[key] / rates[key + '_2']
    return [one, two]


def _round(number):
    """The phases of round ``number``: those of one resource and of two
    take turns at going first, so that neither always follows the other's
    writes."""
    if number % 2 == 0:
        return ledger_workers.PHASES
    swapped = {'reserve': 'reserve_2', 'reserve_2': 'reserve',
               'commit': 'commit_2', 'commit_2': 'commit'}
    return tuple(swapped.get(phase, phase) for phase in ledger_workers.PHASES)


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
    rates = {phase: ops[phase] / wall[phase]
             for phase in ledger_workers.PHASES}
    rates.update({phase + '_ratio': rates[phase] / rates['raw']
                  for phase in ledger_workers.PHASES[1:]})
    return rates


def _check_books(project, reports):
    """Compare the ledger and the hot row with what the workers did."""
    done = collections.Counter()
    for report in reports:
        done.update(report['done'])
    # Per resource, and in reservation rows, what the reserves and commits
    # of each size leave.
    expected = collections.defaultdict(collections.Counter)
    rows = collections.Counter()
    for suffix, deltas in zip(ledger_workers.SUFFIXES, ledger_workers.DELTAS):
        reserves, commits = done['reserve' + suffix], done['commit' + suffix]
        for resource in deltas:
            expected[resource].update(used=commits,
                                      reserved=reserves - commits)
        rows.update({models.COMMITTED: commits * len(deltas),
                     models.RESERVED: (reserves - commits) * len(deltas)})
    context = cyquota_context.get_admin_context()
    usage = quota.QUOTAS.get_project_usage(context, project)
    reservations = models.Reservation.__table__
    with db_api.get_engine().connect() as conn:
        statuses = dict(conn.execute(
            sa.select(reservations.c.status, sa.func.count())
            .where(reservations.c.project_id == project)
            .group_by(reservations.c.status)).all())
        hot = conn.execute(sa.select(ledger_workers.HOT.c.n)).scalar()
    problems = ['%s %s %d, expected %d' % (
        resource, key, usage[resource][key], counts[key])
        for resource, counts in sorted(expected.items())
        for key in ('used', 'reserved')
        if usage[resource][key] != counts[key]]
    problems += ['%d %s reservation rows, expected %d' % (
        statuses.get(status, 0), status, number)
        for status, number in rows.items()
        if statuses.get(status, 0) != number]
    if hot != done['raw'] + done['oslo_db']:
        problems.append('hot row %d, expected %d' % (
            hot, done['raw'] + done['oslo_db']))
    return problems, '%d+%d reserved, %d+%d committed' % (
        done['reserve'], done['reserve_2'], done['commit'],
        done['commit_2'])
