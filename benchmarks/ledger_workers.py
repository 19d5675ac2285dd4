"""The worker processes of the ledger benchmark (``benchmarks.ledger``):
each runs the timed phases of its plan in lock step with the others (a
barrier before each phase) and reports what it did, or its error."""

import collections
import time
import traceback

import sqlalchemy as sa

import benchmarks
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota import quota

#: One resource, then two: an operation of each ``deltas`` in turn.
DELTAS = ({'FPGA': 1}, {'FPGA': 1, 'GPU': 1})
PHASES = ('raw', 'oslo_db', 'reserve', 'reserve_2', 'commit', 'commit_2')
# The suffix of the phases of each of DELTAS.
SUFFIXES = ('', '_2')
RAW_UPDATE = 'UPDATE hot SET n = n + 1'
# Spawning and importing eight workers on a busy machine can take a while.
BARRIER_TIMEOUT = 300

#: The one-row table of the raw durable counter.
HOT = sa.Table('hot', sa.MetaData(),
               sa.Column('id', sa.Integer, primary_key=True,
                         autoincrement=False),
               sa.Column('n', sa.Integer, nullable=False),
               mysql_engine='InnoDB')


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


def worker(url, project, plan, seconds, barrier, results):
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

    def raw_update():
        cursor.execute(RAW_UPDATE)
        raw.commit()

    def oslo_db_update():
        with db_api.writer(context) as session:
            session.execute(oslo_db_statement)

    def reserve(deltas, held):
        return lambda: held.append(quota.QUOTAS.reserve(context, project,
                                                        deltas))

    def commit(held):
        return lambda: quota.QUOTAS.commit(context, project, held.popleft())

    operations = {'raw': raw_update, 'oslo_db': oslo_db_update}
    # The reservations not committed yet, by phase suffix.
    pending = {}
    for suffix, deltas in zip(SUFFIXES, DELTAS):
        pending[suffix] = collections.deque()
        operations['reserve' + suffix] = reserve(deltas, pending[suffix])
        operations['commit' + suffix] = commit(pending[suffix])
    done = collections.Counter()
    # One untimed operation of each kind connects and warms the caches
    # (and creates the project's usage rows); it is counted in the books.
    for phase in PHASES:
        operations[phase]()
        done[phase] += 1
    timings = []
    for phase in plan:
        barrier.wait(BARRIER_TIMEOUT)
        held = pending['_2' if phase.endswith('_2') else '']
        count, elapsed = _timed(operations[phase], seconds,
                                (lambda: held) if phase.startswith('commit')
                                else (lambda: True))
        done[phase] += count
        timings.append((count, elapsed))
    raw.close()
    return {'done': dict(done), 'timings': timings, 'errors': dict(errors)}
