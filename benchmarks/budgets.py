"""Budgets benchmark (SPEC 3.8, cost): the hot paths with and without an
accelerator-hour budget, and the period roll-over of many budgets.

For every backend, in one throw-away database, one process:

* reserve+commit: ``QUOTAS.reserve`` then ``QUOTAS.commit`` of one
  ``GPU``, each its own transaction, for a project without a budget and
  for one with a budget of the resource (so large it never runs out);
* the same under strict-two-level, by a child of a root without a budget
  and by a child of a root whose budget covers its tree (the locked path,
  the tree's row metered);
* lease create: ``LEASES.create`` of one ``FPGA`` for an hour on one
  device (``member_of``), no usage-enforcement filter, for a project
  without a budget and for one with a budget of ``FPGA`` (the lease is
  charged its hour when accepted); each lease then ended (refunded) and
  purged untimed, so that both cases meet the same, empty, calendar.

The two cases take turns operation by operation, the one going first
alternating, for several rounds, so that the machine's drift touches
both alike. Beside the rates, the statements each operation sends
(``before_cursor_execute`` on cyquota's engine and its autocommit
engine, a MariaDB ``PREPARE`` not counted). The targets: with a budget,
a p50 at most 1.2x the p50 without; without one, the statements of the
code before budgets (``STATEMENTS_BEFORE_BUDGETS``).

Then, in a throw-away database of its own, the roll-over: 10,000
projects with budgets (written in bulk as ``books.set_budget`` writes
them, in the period before the current one, their usage rows metering
since then) rolled over to the current period by one
``rollover.roll_all``: statements per project (a fixed number, whatever
the project's budgets), projects per second, and ``budget check`` after.
"""

import datetime
import statistics
import time
import uuid as uuidlib

import sqlalchemy as sa

import benchmarks
from benchmarks import lease_rows
from benchmarks import report
from cyquota.budgets import books
from cyquota.budgets import check as budget_check
from cyquota.budgets import rollover
from cyquota.budgets import rows as budget_rows
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import budget_models
from cyquota.db import lease_models
from cyquota.db import meter
from cyquota.db import models
from cyquota import leases
from cyquota.placement import aggregates
from cyquota.placement import inventories
from cyquota.placement import providers
from cyquota import quota

TITLE = ('Budgets: reserve+commit and lease create with and without an '
         'accelerator-hour budget; the roll-over of many budgets')
COLUMNS = [
    ('backend', 'backend', '{}'),
    ('case', 'case', '{}'),
    ('without', 'no budget/s', '{:.0f}'),
    ('with', 'budget/s', '{:.0f}'),
    ('p50_ratio', 'p50 budget/none', '{:.2f}'),
    ('ratio', 'mean budget/none', '{:.2f}'),
    ('statements_without', 'statements, no budget', '{}'),
    ('statements_with', 'statements, budget', '{}'),
    ('projects', 'projects', '{}'),
    ('seconds', 'seconds', '{:.1f}'),
    ('per_second', 'projects/s', '{:.0f}'),
    ('per_project', 'statements per project', '{}'),
    ('check', 'books after the run', '{}'),
]
RESERVE = 'reserve+commit, 1 GPU'
TREE_RESERVE = 'reserve+commit, 1 GPU, a tree\'s child'
LEASE = 'lease create, 1 FPGA for 1 h'
#: The target of the time of an operation with a budget over without
#: (p50 over p50; the mean's ratio, the rates', beside it).
TARGET = 1.2
#: Hours of the measured budgets: they never run out.
HOURS = 10 ** 6
#: Projects rolled over (``--quick``: ``QUICK_PROJECTS``).
PROJECTS = 10000
QUICK_PROJECTS = 200
PLAIN = 'bench-no-budget'
BUDGETED = 'bench-budget'
#: The statements each operation sent before budgets, on the code of
#: 775f802 (main before the budgets were merged), counted as here with
#: no budget after a warm-up: the target of the rows without a budget.
#: SQLite counts the ``BEGIN IMMEDIATE`` cyquota sends; PostgreSQL and
#: MariaDB run the reserve and the commit as one statement each.
STATEMENTS_BEFORE_BUDGETS = {
    'sqlite': {RESERVE: '3 + 4', LEASE: '13'},
    'postgresql': {RESERVE: '1 + 1', LEASE: '8'},
    'mysql': {RESERVE: '1 + 1', LEASE: '8'},
}


def _rollover_case(count):
    return 'roll-over, %s projects' % format(count, ',')


def run(args, progress):
    """Measure every backend in ``args.backends``."""
    ops, creates, rounds = ((10, 3, 2) if args.quick else (200, 30, 10))
    count = QUICK_PROJECTS if args.quick else PROJECTS
    rows = []
    for backend, url in benchmarks.databases('budgets', args.backends,
                                             progress):
        if url is None:
            rows.append(dict(benchmarks.UNREACHABLE, backend=backend))
            continue
        rows.append(_measure_reserves(backend, ops, rounds, progress))
        rows.append(_measure_tree_reserves(backend, ops, rounds, progress))
        rows.append(_measure_leases(backend, creates, rounds, progress))
    for backend, url in benchmarks.databases('budgets', args.backends,
                                             progress):
        if url is not None:
            rows.append(_measure_rollover(backend, count, progress))
    return rows


def summary(rows):
    """Lines under the table: the targets, met or missed."""
    lines = ['  %s: no measurement (%s)' % (row['backend'], row['check'])
             for row in rows if 'case' not in row]
    lines.append('target: with a budget at most %.1fx the time without '
                 '(p50; reserve+commit, lease create)' % TARGET)
    for row in rows:
        if 'ratio' in row:
            lines.append('  %s: %s: %.2fx (mean %.2fx), %s' % (
                row['backend'], row['case'], row['p50_ratio'],
                row['ratio'], 'target met' if row['p50_ratio'] <= TARGET
                else 'MISSED'))
    lines.append('target: without a budget, the statements of the code '
                 'before budgets')
    for row in rows:
        if 'statements_without' in row:
            before = row.get('statements_before')
            lines.append('  %s: %s: %s, before budgets %s: %s' % (
                row['backend'], row['case'], row['statements_without'],
                before or 'not known',
                'target met' if row['statements_without'] == before
                else 'MISSED' if before else 'not checked'))
    lines.append('target: the roll-over sends a fixed number of statements '
                 'per project, and budget check agrees after it')
    for row in rows:
        if 'per_project' in row:
            lines.append('  %s: %s: %s per project, %.0f projects/s: %s' % (
                row['backend'], row['case'], row['per_project'],
                row['per_second'],
                'target met' if row['fixed'] and not row['failed']
                else 'MISSED'))
    return lines


def plot(rows, ax):
    """The time with a budget over without of each hot path per backend;
    beside it, the roll-over's projects per second."""
    measured = [row for row in rows if 'ratio' in row]
    x = range(len(measured))
    ax.bar([i - 0.2 for i in x], [r['p50_ratio'] for r in measured], 0.4,
           label='p50, budget / none')
    ax.bar([i + 0.2 for i in x], [r['ratio'] for r in measured], 0.4,
           label='mean time, budget / none')
    ax.axhline(TARGET, color='grey', linestyle='--', label='target')
    ax.set_xticks(list(x), ['%s\n%s' % (r['backend'], r['case'].split(',')[0])
                            for r in measured], fontsize=7)
    ax.set_ylim(0, max([TARGET * 1.2] + [
        r[key] * 1.1 for r in measured for key in ('ratio', 'p50_ratio')]))
    ax.set_ylabel('with a budget / without')
    ax.legend(fontsize=7)
    rolled = [row for row in rows if 'per_second' in row]
    side = report.side_axes(ax, '35%')
    side.bar(range(len(rolled)), [r['per_second'] for r in rolled])
    side.set_xticks(list(range(len(rolled))), [
        '%s\n%s per project' % (r['backend'], r['per_project'])
        for r in rolled], fontsize=7)
    side.set_ylabel('roll-over: projects/s (%s)' % ', '.join(sorted({
        format(r['projects'], ',') for r in rolled})))


# -- measuring ---------------------------------------------------------------

class Statements:
    """Counts the statements sent on cyquota's engines of the moment: the
    engine of ``db_api`` and its autocommit engine, where PostgreSQL and
    MariaDB run the ledger's one-statement reserve and commit; a
    ``PREPARE`` not counted (a connection prepares a statement once, the
    first time it runs it, and that run is counted)."""

    def __init__(self):
        self.sent = 0
        self._engines = []

    def _seen(self, conn, cursor, statement, *args):
        if not statement.startswith('PREPARE '):
            self.sent += 1

    def listen(self):
        self.stop()
        self._engines = [db_api.get_engine(), db_api.get_autocommit_engine()]
        for engine in self._engines:
            sa.event.listen(engine, 'before_cursor_execute', self._seen)

    def stop(self):
        for engine in self._engines:
            sa.event.remove(engine, 'before_cursor_execute', self._seen)
        self._engines = []


def _shown(counts):
    """A set of statement counts as one number, or its range."""
    if not counts:
        return '-'
    low, high = min(counts), max(counts)
    return str(low) if low == high else '%d-%d' % (low, high)


def _timed_turns(cases, ops, rounds, progress, label, statements):
    """Run ``cases`` (``{name: operation}``; an operation returns its
    time in milliseconds and the statements it sent) by turns, operation
    by operation, the one going first alternating (ABBA: a load that
    comes and goes touches both alike), ``ops`` times each a round after
    one untimed run of each, ``statements`` (a ``Statements``) counting
    meanwhile; ``{name: (timings in ms, {statement counts})}``."""
    statements.listen()
    try:
        return _turns(cases, ops, rounds, progress, label)
    finally:
        statements.stop()


def _turns(cases, ops, rounds, progress, label):
    found = {name: ([], set()) for name in cases}
    names = list(cases)
    for turn in range(rounds):
        progress.step('budgets: %s: round %d of %d' % (label, turn + 1,
                                                       rounds))
        for name in names:
            cases[name]()  # untimed: warms connections and caches
        for number in range(ops):
            for name in names if number % 2 == 0 else names[::-1]:
                timings, counts = found[name]
                took, sent = cases[name]()
                timings.append(took)
                counts.add(sent)
    return found


def _compared(backend, case, found, shown):
    """The row of ``case``: the rates and ratios of the two cases of
    ``found``, their statements as ``shown`` shows a set of counts."""
    (plain, plain_counts), (_, budgeted_counts) = found[False], found[True]
    mean = {key: statistics.fmean(found[key][0]) for key in found}
    p50 = {key: statistics.median(found[key][0]) for key in found}
    row = dict(backend=backend, case=case,
               without=1000 / mean[False], with_=1000 / mean[True],
               ratio=mean[True] / mean[False],
               p50_ratio=p50[True] / p50[False],
               p50_without=p50[False], p50_with=p50[True],
               operations=len(plain),
               statements_without=shown(plain_counts),
               statements_with=shown(budgeted_counts),
               statements_before=(STATEMENTS_BEFORE_BUDGETS.get(backend, {})
                                  .get(case)))
    row['with'] = row.pop('with_')
    return row


def _measure_reserves(backend, ops, rounds, progress):
    """reserve+commit of one GPU without and with a budget."""
    ctx = cyquota_context.get_admin_context()
    quota.QUOTAS.limits.set_registered_limit(ctx, 'GPU', 2 ** 31 - 1)
    books.set_budget(ctx, BUDGETED, 'GPU', HOURS)
    return _reserve_turns(backend, RESERVE, ctx, ops, rounds, progress,
                          {PLAIN: PLAIN, BUDGETED: BUDGETED})


def _measure_tree_reserves(backend, ops, rounds, progress):
    """reserve+commit of one GPU by a child of a root without a budget
    and by one of a root whose budget covers its tree, under
    strict-two-level."""
    ctx = cyquota_context.get_admin_context()
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    quota.QUOTAS.reset()
    try:
        children = {}
        for root in (PLAIN, BUDGETED):
            children[root] = root + '-child'
            quota.QUOTAS.limits.set_project(ctx, root + '-root')
            quota.QUOTAS.limits.set_project(ctx, children[root],
                                            parent_id=root + '-root')
        books.set_budget(ctx, BUDGETED + '-root', 'GPU', HOURS,
                         model=quota.QUOTAS.limits.model)
        return _reserve_turns(backend, TREE_RESERVE, ctx, ops, rounds,
                              progress, children, shown_in='tree')
    finally:
        CONF.clear_override('enforcement_model', 'quota')
        quota.QUOTAS.reset()


def _reserve_turns(backend, case, ctx, ops, rounds, progress, projects,
                   shown_in=None):
    """reserve+commit by turns of ``projects[PLAIN]`` (without a budget)
    and ``projects[BUDGETED]`` (with one, whose ``remaining_hours`` the
    usage document shows, in its part ``shown_in`` if given)."""
    statements = Statements()
    made = {project: 0 for project in projects.values()}

    def operation(project):
        def reserve_commit():
            before = statements.sent
            began = time.perf_counter()
            reservations = quota.QUOTAS.reserve(ctx, project, {'GPU': 1})
            between = statements.sent
            quota.QUOTAS.commit(ctx, project, reservations)
            took = (time.perf_counter() - began) * 1000
            made[project] += 1
            return took, (between - before, statements.sent - between)
        return reserve_commit

    found = _timed_turns({False: operation(projects[PLAIN]),
                          True: operation(projects[BUDGETED])}, ops, rounds,
                         progress, '%s: %s' % (backend, case), statements)
    row = _compared(backend, case, found, lambda counts: ' + '.join(
        _shown({count[part] for count in counts}) for part in (0, 1)))
    problems = []
    for project, count in made.items():
        usage = quota.QUOTAS.get_project_usage(ctx, project)['GPU']
        if (usage['used'], usage['reserved']) != (count, 0):
            problems.append('%s: used %d reserved %d, %d committed' % (
                project, usage['used'], usage['reserved'], count))
        budgeted = usage.get(shown_in, {}) if shown_in else usage
        if ('remaining_hours' in budgeted) != (
                project == projects[BUDGETED]):
            problems.append('%s: remaining hours %s' % (
                project, budgeted.get('remaining_hours')))
    problems += _disagreements(ctx)
    return _checked(row, problems, progress)


def _device(ctx, host):
    """A device of 100 FPGAs in an aggregate of its own: its
    ``member_of``."""
    uuid = providers.create(ctx, 'bench-budget-device',
                            parent_provider_uuid=host).uuid
    inventories.set_all(ctx, uuid, providers.get(ctx, uuid).generation,
                        {'FPGA': {'total': 100}})
    aggregate = str(uuidlib.uuid4())
    aggregates.set_for_provider(ctx, uuid,
                                providers.get(ctx, uuid).generation,
                                [aggregate])
    return aggregate


def _window(now):
    """An hour a day ahead, or, where that would leave the current
    period, ten minutes ahead: a charge of the period the books are in,
    as most are."""
    start = (now + datetime.timedelta(days=1)).replace(microsecond=0)
    if start + datetime.timedelta(hours=1) > meter.current_periods().of(
            now).end:
        start = (now + datetime.timedelta(minutes=10)).replace(microsecond=0)
    return start, start + datetime.timedelta(hours=1)


def _measure_leases(backend, creates, rounds, progress):
    """LEASES.create of one FPGA for an hour without and with a budget,
    every lease ended and purged untimed."""
    ctx = cyquota_context.get_admin_context()
    CONF.clear_override('enabled_filters', 'enforcement')
    leases.LEASES.reset()
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 10 ** 6)
    books.set_budget(ctx, BUDGETED, 'FPGA', HOURS)
    member_of = _device(ctx, providers.create(ctx, 'bench-budget-cn').uuid)
    start, end = _window(models.utcnow())
    body = dict(start_date=start.isoformat() + 'Z',
                end_date=end.isoformat() + 'Z',
                reservations=[{'resource_type': 'accelerator:FPGA',
                               'amount': 1, 'member_of': [member_of]}])
    statements = Statements()
    problems = []
    made = {PLAIN: 0, BUDGETED: 0}

    def operation(project):
        def create():
            before = statements.sent
            began = time.perf_counter()
            lease = leases.LEASES.create(ctx, project, dict(body))
            took = (time.perf_counter() - began) * 1000
            sent = statements.sent - before
            made[project] += 1
            if lease['status'] != lease_models.PENDING:
                problems.append('%s: lease %s' % (project, lease['status']))
            leases.LEASES.delete(ctx, lease['id'])
            lease_rows.purge([lease['id']])
            return took, sent
        return create

    found = _timed_turns({False: operation(PLAIN),
                          True: operation(BUDGETED)}, creates, rounds,
                         progress, '%s: %s' % (backend, LEASE), statements)
    row = _compared(backend, LEASE, found, _shown)
    for project in made:
        usage = quota.QUOTAS.get_project_usage(ctx, project)['FPGA']
        counts = tuple(usage[k] for k in ('used', 'reserved', 'leased',
                                          'promised'))
        if counts != (0, 0, 0, 0):
            problems.append('%s holds %s' % (project, counts))
    live = sum(lease_rows.count(lease_models.Lease.__table__, status=status)
               for status in lease_models.LIVE)
    if live:
        problems.append('%d live leases' % live)
    # Each budgeted lease charged its hour and refunded it when cancelled.
    entries = budget_models.BudgetEntry.__table__
    for kind in (budget_models.LEASE_CHARGE, budget_models.LEASE_REFUND):
        found_entries = lease_rows.count(entries, project_id=BUDGETED,
                                         kind=kind)
        if found_entries != made[BUDGETED]:
            problems.append('%d %s entries for %d leases' % (
                found_entries, kind, made[BUDGETED]))
    if lease_rows.count(entries, project_id=PLAIN):
        problems.append('entries of the project without a budget')
    problems += _disagreements(ctx)
    return _checked(row, problems, progress)


def _disagreements(ctx):
    found = budget_check.disagreements(ctx)
    return ['budget check: %d disagreement(s), first %s' % (
        len(found), found[0]._asdict())] if found else []


def _checked(row, problems, progress):
    row['check'] = '; '.join(problems[:3]) or 'ok'
    row['failed'] = bool(problems)
    progress.step('budgets: %s: %s: %s' % (row['backend'], row['case'],
                                           row['check']))
    return row


# -- the roll-over ----------------------------------------------------------

def _plan(count, now):
    """The books of ``count`` projects as ``books.set_budget`` leaves
    them when set an hour into the period before the current one
    (``A``), each project holding one unit by attaches since then: the
    rows of ``quota_usages``, ``budgets`` and ``budget_entries``. Every
    fourth project has budgets of two resources (GPU and FPGA), the
    others of GPU; every third budget refills by ``carry`` (a cap of
    twice its hours every sixth); every fifth project has a lease's
    charge booked for the current period."""
    periods = meter.current_periods()
    current = periods.of(now)
    before = periods.of(current.start - datetime.timedelta(seconds=1))
    set_at = before.start + datetime.timedelta(hours=1)
    usages, budgets, entries = [], [], []
    for n in range(count):
        project = 'bench-roll-%06d' % n
        for resource in ('FPGA', 'GPU') if n % 4 == 0 else ('GPU',):
            seconds = (100 + n % 7) * 3600
            number = len(budgets)
            carry = number % 3 == 0
            usages.append(dict(
                project_id=project, resource=resource, used=1, reserved=0,
                leased=0, promised=0, metered=0,
                metered_at=meter.seconds(set_at),
                marked_period=meter.seconds(before.start), metered_mark=0,
                budget_base=seconds, created_at=set_at))
            budgets.append(dict(
                project_id=project, resource=resource, seconds=seconds,
                refill=(budget_models.REFILL_CARRY if carry
                        else budget_models.REFILL_RESET),
                cap=2 * seconds if carry and number % 6 == 0 else None,
                period_start=before.start, closed_meter=0,
                created_at=set_at))
            entries.append(budget_rows.entry(
                project, resource, budget_models.REFILL, seconds,
                before.start, set_at, actor='bench', reason='budget set'))
            if n % 5 == 0:
                entries.append(budget_rows.entry(
                    project, resource, budget_models.LEASE_CHARGE, -3600,
                    current.start, set_at, actor='bench',
                    reason='lease accepted', lease_id=str(uuidlib.uuid4())))
    return usages, budgets, entries


def _write(table, values):
    with db_api.get_engine().begin() as conn:
        for first in range(0, len(values), 5000):
            conn.execute(table.insert(), values[first:first + 5000])


def _measure_rollover(backend, count, progress):
    """One ``rollover.roll_all`` of ``count`` projects due: statements per
    project, projects per second; the books checked before and after."""
    ctx = cyquota_context.get_admin_context()
    case = _rollover_case(count)
    progress.step('budgets: %s: writing the books of %s projects' % (
        backend, format(count, ',')))
    usages, budgets, entries = _plan(count, models.utcnow())
    _write(models.QuotaUsage.__table__, usages)
    _write(budget_models.Budget.__table__, budgets)
    _write(budget_models.BudgetEntry.__table__, entries)
    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql(
            'ANALYZE TABLE quota_usages, budgets, budget_entries'
            if backend == 'mysql' else 'ANALYZE').close()
    problems = ['before the roll-over: %s' % problem
                for problem in _disagreements(ctx)]
    statements = Statements()
    per_project = []
    roll_project = rollover.roll_project

    def counted(context, project_id, now=None):
        before = statements.sent
        try:
            return roll_project(context, project_id, now)
        finally:
            per_project.append(statements.sent - before)

    progress.step('budgets: %s: rolling %s projects over' % (
        backend, format(count, ',')))
    statements.listen()
    rollover.roll_project = counted
    try:
        began = time.perf_counter()
        moved = rollover.roll_all(ctx)
        seconds = time.perf_counter() - began
    finally:
        rollover.roll_project = roll_project
        total = statements.sent
        statements.stop()
    if moved != count:
        problems.append('moved %d of %d projects' % (moved, count))
    again = rollover.roll_all(ctx)
    if again:
        problems.append('a second roll-over moved %d' % again)
    problems += _rolled(ctx, budgets, entries)
    shown = _shown(set(per_project))
    row = dict(backend=backend, case=case, projects=count, seconds=seconds,
               per_second=count / seconds, per_project=shown,
               fixed=len(set(per_project)) == 1,
               statements=total, page_reads=total - sum(per_project),
               budgets=len(budgets))
    if not row['fixed']:
        problems.append('statements per project vary: %s' % shown)
    return _checked(row, problems, progress)


def _rolled(ctx, budgets, entries):
    """What is wrong after the roll-over: every budget in the current
    period, an accrual and a refill entry more per budget, and budget
    check agreeing."""
    problems = []
    start = meter.current_periods().of(models.utcnow()).start
    table = budget_models.Budget.__table__
    with db_api.get_engine().connect() as conn:
        behind = conn.execute(sa.select(sa.func.count()).select_from(
            table).where(table.c.period_start != start)).scalar()
    if behind:
        problems.append('%d budgets not in the current period' % behind)
    written = lease_rows.count(budget_models.BudgetEntry.__table__)
    if written != len(entries) + 2 * len(budgets):
        problems.append('%d entries, expected %d' % (
            written, len(entries) + 2 * len(budgets)))
    return problems + _disagreements(ctx)
