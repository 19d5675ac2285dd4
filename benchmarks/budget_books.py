"""The budgets benchmark's books (``benchmarks.budgets``): the roll-over
of many budgets, and what both halves check and show.

In a throw-away database of its own, the books of ``PROJECTS`` projects
with budgets (written in bulk as ``books.set_budget`` writes them, in the
period before the current one, their usage rows metering since then) are
rolled over to the current period by one ``rollover.roll_all``:
statements per project (a fixed number, whatever the project's budgets),
projects per second, and ``budget check`` after.
"""

import datetime
import time
import uuid as uuidlib

import sqlalchemy as sa

from benchmarks import lease_rows
from cyquota.budgets import check as budget_check
from cyquota.budgets import rollover
from cyquota.budgets import rows as budget_rows
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import budget_models
from cyquota.db import meter
from cyquota.db import models

#: Projects rolled over (``--quick``: ``QUICK_PROJECTS``).
PROJECTS = 10000
QUICK_PROJECTS = 200


def case(count):
    """The row's case of a roll-over of ``count`` projects."""
    return 'roll-over, %s projects' % format(count, ',')


def shown(counts):
    """A set of statement counts as one number, or its range."""
    if not counts:
        return '-'
    low, high = min(counts), max(counts)
    return str(low) if low == high else '%d-%d' % (low, high)


def disagreements(ctx):
    """What ``budget check`` finds, as a problem of a row (none: [])."""
    found = budget_check.disagreements(ctx)
    return ['budget check: %d disagreement(s), first %s' % (
        len(found), found[0]._asdict())] if found else []


def checked(row, problems, progress):
    """``row`` with its ``check`` (the first ``problems``, or ok)."""
    row['check'] = '; '.join(problems[:3]) or 'ok'
    row['failed'] = bool(problems)
    progress.step('budgets: %s: %s: %s' % (row['backend'], row['case'],
                                           row['check']))
    return row


def plan(count, now):
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


def write(table, values):
    """Insert ``values`` into ``table``, 5,000 rows a statement."""
    with db_api.get_engine().begin() as conn:
        for first in range(0, len(values), 5000):
            conn.execute(table.insert(), values[first:first + 5000])


def measure(backend, count, progress):
    """One ``rollover.roll_all`` of ``count`` projects due: statements per
    project, projects per second; the books checked before and after."""
    ctx = cyquota_context.get_admin_context()
    progress.step('budgets: %s: writing the books of %s projects' % (
        backend, format(count, ',')))
    usages, budgets, entries = plan(count, models.utcnow())
    write(models.QuotaUsage.__table__, usages)
    write(budget_models.Budget.__table__, budgets)
    write(budget_models.BudgetEntry.__table__, entries)
    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql(
            'ANALYZE TABLE quota_usages, budgets, budget_entries'
            if backend == 'mysql' else 'ANALYZE').close()
    problems = ['before the roll-over: %s' % problem
                for problem in disagreements(ctx)]
    statements = lease_rows.Statements(autocommit=True)
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
    problems += rolled(ctx, budgets, entries)
    per_project_shown = shown(set(per_project))
    row = dict(backend=backend, case=case(count), projects=count,
               seconds=seconds, per_second=count / seconds,
               per_project=per_project_shown,
               fixed=len(set(per_project)) == 1,
               statements=total, page_reads=total - sum(per_project),
               budgets=len(budgets))
    if not row['fixed']:
        problems.append('statements per project vary: %s'
                        % per_project_shown)
    return checked(row, problems, progress)


def rolled(ctx, budgets, entries):
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
    return problems + disagreements(ctx)
