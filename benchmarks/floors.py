"""Ledger floors: where one reserve and one commit spend their time, on
PostgreSQL and MariaDB.

The ledger benchmark sets ``QUOTAS.reserve`` and ``QUOTAS.commit`` beside
the raw rate of a durable counter. This one splits the gap. In one
process, on a throw-away database, one project with a usage row:

* ``raw``: ``UPDATE hot SET n = n + 1; COMMIT`` on the driver's own
  connection, the reference;
* ``statement``: the very statement the ledger sends for the operation
  (caught from a ``QUOTAS`` call as it goes to the driver: the
  ``EXECUTE`` of its prepared statement), sent again with a fresh
  reservation on the driver's own autocommit connection, where it is its
  own transaction (as the ledger runs it): what the server and the
  driver cost;
* ``ledger``: ``QUOTAS.reserve`` and ``QUOTAS.commit``, everything above
  the driver included (SQLAlchemy, oslo.db, the ledger, the engine).

The phases take turns for several rounds of a fixed number of operations;
each figure is the mean of its fastest round. SQLite has no one-statement
form (it runs one statement per count) and is not measured.
"""

import contextlib
import time

from oslo_utils import uuidutils
import sqlalchemy as sa

import benchmarks
from benchmarks import ledger_workers
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota import quota

TITLE = 'Ledger floors: one reserve and one commit, layer by layer'
COLUMNS = [
    ('backend', 'backend', '{}'),
    ('operation', 'operation', '{}'),
    ('raw', 'raw UPDATE;COMMIT ms', '{:.3f}'),
    ('statement', 'the statement ms', '{:.3f}'),
    ('ledger', 'QUOTAS call ms', '{:.3f}'),
    ('statement_ratio', 'statement rate/raw', '{:.2f}'),
    ('ledger_ratio', 'QUOTAS rate/raw', '{:.2f}'),
    ('check', 'books after the run', '{}'),
]
#: The ledger benchmark's target for the QUOTAS calls' rate over raw.
TARGET = 0.5
PROJECT = 'floors'
RESOURCE = 'FPGA'


def run(args, progress):
    """Measure PostgreSQL and MariaDB among ``args.backends``."""
    operations, rounds = (20, 2) if args.quick else (300, 5)
    rows = []
    servers = [backend for backend in args.backends if backend != 'sqlite']
    for backend, url in benchmarks.databases('floors', servers, progress):
        if url is None:
            rows.append(dict(benchmarks.UNREACHABLE, backend=backend,
                             operation='-'))
            continue
        rows.extend(_measure(backend, operations, rounds, progress))
    return rows


def summary(rows):
    """Lines under the table: what each layer leaves of raw's rate."""
    lines = ['the QUOTAS calls\' target (ledger benchmark): rate/raw >= %.2f;'
             ' it is out of reach where the statement alone is below it'
             % TARGET]
    for row in rows:
        if 'raw' not in row:
            lines.append('  %s: no measurement (%s)'
                         % (row['backend'], row['check']))
            continue
        lines.append(
            '  %s %s: the statement alone %.2f of raw, through every layer '
            '%.2f (%.3f ms above the driver)' % (
                row['backend'], row['operation'], row['statement_ratio'],
                row['ledger_ratio'], row['ledger'] - row['statement']))
    return lines


def plot(rows, ax):
    """Milliseconds per operation of each layer, per backend and
    operation."""
    rows = [row for row in rows if 'raw' in row]
    x = range(len(rows))
    width = 0.27
    for offset, (layer, label) in zip((-width, 0, width), (
            ('raw', 'raw UPDATE; COMMIT'),
            ('statement', 'the ledger\'s statement on the driver'),
            ('ledger', 'QUOTAS call'))):
        ax.bar([i + offset for i in x], [r[layer] for r in rows], width,
               label=label)
    ax.set_xticks(list(x), ['%s\n%s' % (r['backend'], r['operation'])
                            for r in rows])
    ax.set_ylabel('ms per operation (fastest round)')
    ax.legend()


def _measure(backend, operations, rounds, progress):
    """The reserve row and the commit row of one backend."""
    engine = db_api.get_engine()
    # The one statements run on the autocommit engine.
    engines = [engine, db_api.get_autocommit_engine()]
    with engine.begin() as conn:
        ledger_workers.HOT.create(conn)
        conn.execute(ledger_workers.HOT.insert().values(id=1, n=0))
    ctx = cyquota_context.get_admin_context()
    quota.QUOTAS.limits.set_project_limit(ctx, PROJECT, RESOURCE, 2 ** 30)
    # The first reserve makes the usage row (the locked path, after the
    # one statement found none); the second and its commit take the
    # one-statement path.
    with _sent(engines) as sent:
        for _ in range(2):
            quota.QUOTAS.commit(ctx, PROJECT, quota.QUOTAS.reserve(
                ctx, PROJECT, {RESOURCE: 1}))
    replay = _Replay(sent)
    done = {'reserve': 2, 'commit': 2}
    mean = {}
    pending = {'statement': [], 'ledger': []}

    def ledger_reserve():
        pending['ledger'].extend(quota.QUOTAS.reserve(
            ctx, PROJECT, {RESOURCE: 1}))

    def ledger_commit():
        quota.QUOTAS.commit(ctx, PROJECT, [pending['ledger'].pop()])

    for number in range(rounds):
        progress.step('floors: %s: round %d of %d (%d operations a layer)'
                      % (backend, number + 1, rounds, operations))
        with contextlib.closing(engine.raw_connection()) as raw, \
                contextlib.closing(replay.connection(engines[1])) as one:
            _round(mean, 'raw', operations, lambda: replay.raw(raw))
            _round(mean, 'statement reserve', operations,
                   lambda: pending['statement'].append(replay.reserve(one)))
            _round(mean, 'statement commit', operations,
                   lambda: replay.commit(one, pending['statement'].pop()))
        _round(mean, 'ledger reserve', operations, ledger_reserve)
        _round(mean, 'ledger commit', operations, ledger_commit)
        for operation in done:
            done[operation] += 2 * operations
    check = _books(ctx, done)
    rows = []
    for operation in ('reserve', 'commit'):
        row = dict(backend=backend, operation=operation, raw=mean['raw'],
                   statement=mean['statement ' + operation],
                   ledger=mean['ledger ' + operation], check=check,
                   failed=check != 'ok')
        row['statement_ratio'] = row['raw'] / row['statement']
        row['ledger_ratio'] = row['raw'] / row['ledger']
        rows.append(row)
    return rows


def _round(mean, phase, operations, operation):
    """Run ``operation`` ``operations`` times; keep the fastest round's
    milliseconds per operation in ``mean[phase]``."""
    started = time.perf_counter()
    for _ in range(operations):
        operation()
    took = (time.perf_counter() - started) * 1000 / operations
    mean[phase] = min(mean.get(phase, took), took)


@contextlib.contextmanager
def _sent(engines):
    """The (statement, parameters) sent through ``engines`` meanwhile."""
    sent = []

    def record(conn, cursor, statement, parameters, *args):
        sent.append((statement, parameters))
    for engine in engines:
        sa.event.listen(engine, 'before_cursor_execute', record)
    try:
        yield sent
    finally:
        for engine in engines:
            sa.event.remove(engine, 'before_cursor_execute', record)


class _Replay:
    """The ledger's one-statement reserve and commit, as caught on their
    way to the driver, sent again on a driver connection."""

    def __init__(self, sent):
        # The one statements of two reserves and two commits: MariaDB's
        # EXECUTEs of the texts it prepared, PostgreSQL's CTE chains (which
        # psycopg prepares on the server itself); the last two are the
        # reserve and the commit that took them.
        self.prepare = [(s, p) for s, p in sent if s.startswith('PREPARE')]
        runs = [(s, p) for s, p in sent if s.startswith(
            'EXECUTE' if self.prepare else 'WITH')]
        if len(runs) != 4:
            raise RuntimeError('expected the one-statement reserves and '
                               'commits, the ledger sent: %s' % [
                                   s.split()[0] for s, _ in sent])
        (self._reserve, self._reserve_params), (
            self._commit, self._commit_params) = runs[-2:]

    def connection(self, engine):
        """A driver connection of ``engine`` (the autocommit engine the
        ledger runs the one statements on), with them prepared."""
        raw = engine.raw_connection()
        # As the ledger does: once per connection (cyquota.db.prepared).
        prepared = raw.info.setdefault('cyquota_prepared', set())
        with raw.cursor() as cursor:
            for statement, params in self.prepare:
                name = statement.split()[1]
                if name not in prepared:
                    cursor.execute(statement, params or None)
                    prepared.add(name)
        return raw

    def raw(self, raw):
        with raw.cursor() as cursor:
            cursor.execute(ledger_workers.RAW_UPDATE)
        raw.commit()

    def reserve(self, one):
        """A reserve of one more unit; returns its uuid."""
        uuid = uuidutils.generate_uuid()
        if not self._run(one, self._reserve,
                         dict(self._reserve_params, _uuid_0=uuid)):
            raise RuntimeError('the replayed reserve did not fit')
        return uuid

    def commit(self, one, uuid):
        if not self._run(one, self._commit,
                         dict(self._commit_params, _uuid_0=uuid)):
            raise RuntimeError('the replayed commit ended nothing')

    def _run(self, one, statement, params):
        """Whether ``statement`` did its operation: PostgreSQL's says 1,
        MariaDB's sends no rows (it would refuse otherwise)."""
        # Prepared on the server as the ledger's connection has it once
        # psycopg has run the text prepare_threshold times.
        prepare = {} if self.prepare else {'prepare': True}
        with one.cursor() as cursor:
            cursor.execute(statement, params, **prepare)
            return cursor.description is None or cursor.fetchall() == [
                (1,)]


def _books(ctx, done):
    """``ok`` when the project's counts hold every reserve and commit."""
    usage = quota.QUOTAS.get_project_usage(ctx, PROJECT)[RESOURCE]
    expected = (done['commit'], done['reserve'] - done['commit'])
    found = (usage['used'], usage['reserved'])
    if found == expected:
        return 'ok'
    return 'used, reserved %s, expected %s' % (found, expected)
