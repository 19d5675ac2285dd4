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

Then the roll-over of 10,000 projects with budgets
(``benchmarks.budget_books``).
"""

import datetime
import statistics
import time
import uuid as uuidlib

import benchmarks
from benchmarks import budget_books
from benchmarks import lease_rows
from benchmarks import report
from cyquota.budgets import books
from cyquota.conf import CONF
from cyquota import context as cyquota_context
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


def run(args, progress):
    """Measure every backend in ``args.backends``."""
    ops, creates, rounds = ((10, 3, 2) if args.quick else (200, 30, 10))
    count = (budget_books.QUICK_PROJECTS if args.quick
             else budget_books.PROJECTS)
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
            rows.append(budget_books.measure(backend, count, progress))
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
    statements = lease_rows.Statements(autocommit=True)
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
        budget_books.shown({count[part] for count in counts})
        for part in (0, 1)))
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
    problems += budget_books.disagreements(ctx)
    return budget_books.checked(row, problems, progress)


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
    statements = lease_rows.Statements(autocommit=True)
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
    row = _compared(backend, LEASE, found, budget_books.shown)
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
    problems += budget_books.disagreements(ctx)
    return budget_books.checked(row, problems, progress)
