"""An admin's writes to a project's budgets: set (or change), delete and
credit, each one transaction that writes its entries and the usage row's
``budget_base`` together, under the locks of the project's books
(``rows.lock``), after moving the books to the current period
(``rollover.roll``) so that every entry counts in the period it is
written in.

Each keeps the invariant of the books (``cyquota.budgets``):

- a new budget opens with a ``refill`` of its hours (plus any entry left
  booked for the period, such as a lease's charge) and its meter starts
  at now (``meter.advance``: a row never metered begins to be);
- a change closes the open accrual (an ``accrual`` entry) and moves this
  period's balance by the change of hours (a ``refill`` entry saying so);
  a new refill kind or cap applies from the next period;
- a delete closes the open accrual and the balance (a ``refill`` entry
  taking it to zero), so a budget set again later starts afresh;
- a credit adds its hours to this period's balance (a ``credit`` entry
  with its actor and reason).

A budget covers its project alone, or, set on a root under
strict-two-level, the whole tree: its ``budget_base`` and meter are then
on the tree's row (``scope`` ``tree``), which every member's change moves.
"""

import sqlalchemy as sa

from cyquota.budgets import entries as entry_pages
from cyquota.budgets import rollover
from cyquota.budgets import rows
from cyquota.budgets import units
from cyquota.db import api as db_api
from cyquota.db import budget_models
from cyquota.db import meter
from cyquota.db import models
from cyquota import exception


def _open_books(conn, project_id, resource, now, create=False):
    """The project's books locked and moved to the period of ``now``
    (``rows.Books``)."""
    binds = meter.binds(now)
    extra = [resource] if create else []
    books = rows.lock(conn, project_id, binds, extra)
    if rollover.roll(conn, project_id, now, books):
        books = rows.lock(conn, project_id, binds, extra)
    return books


def _opened(conn, project_id, resource, now):
    """``(usage, budget)`` of a budget that exists (the row that carries
    it, its row), its books opened; BudgetNotFound else."""
    books = _open_books(conn, project_id, resource, now)
    budget = books.budgets.get(resource)
    usage = None if budget is None else books.holder(budget)
    if usage is None:
        raise exception.BudgetNotFound(project_id=project_id,
                                       resource=resource)
    return usage, budget


def _closed_accrual(context, project_id, usage, budget, now, reason):
    """The entry closing the open accrual at ``now`` (zero or not: each
    change of a budget closes one)."""
    return rows.entry(project_id, budget.resource, budget_models.ACCRUAL,
                      -(usage.meter_now - budget.closed_meter),
                      budget.period_start, now, actor=context.user_id,
                      reason=reason)


def _move_base(conn, usage, seconds, now):
    if seconds:
        table = usage.table
        conn.execute(table.update()
                     .where(table.c.id == usage.id)
                     .values(budget_base=table.c.budget_base + seconds,
                             updated_at=now))


def _covered(context, conn, project_id, resource, model):
    """What a new budget of ``project_id`` would cover (a ``SCOPE_*``).
    Under a model with a level above projects (strict-two-level), the
    budget of that level's holder (a root) covers the level; the model's
    lock (taken first, the ledger's order) makes the level's row where it
    is missing."""
    if model is None:
        return budget_models.SCOPE_PROJECT
    scope = model.lock(context, conn, project_id, [resource], create=True)
    for level in scope.levels(resource):
        if level.holder_id == project_id:
            return level.scope
    return budget_models.SCOPE_PROJECT


@db_api.retry_on_conflict
def set_budget(context, project_id, resource, hours, refill=None, cap=None,
               model=None):
    """Set the budget of ``resource`` of ``project_id``: ``hours`` per
    period, refilled by ``refill`` (``reset``, the default, or ``carry``
    up to ``cap`` hours, None: no cap). InvalidBudget naming the field,
    nothing changed, when a value is not one a budget takes.

    :param model: the enforcement model (``limits.model``), which decides
        what a new budget covers: a root's under strict-two-level, its
        tree. None: the project alone.
    """
    seconds = units.seconds('hours', hours)
    refill = units.refill(budget_models.REFILL_RESET if refill is None
                          else refill)
    cap = units.cap(cap, seconds, refill)
    now = models.utcnow()
    period = meter.current_periods().of(now)
    with db_api.writer_connection(context) as conn:
        scope = _covered(context, conn, project_id, resource, model)
        books = _open_books(conn, project_id, resource, now, create=True)
        budget = books.budgets.get(resource)
        if budget is None:
            _start(conn, context, project_id, resource,
                   books.row(scope, resource), scope, now, period, seconds,
                   refill, cap)
            return
        usage = books.holder(budget)
        written = [_closed_accrual(context, project_id, usage, budget, now,
                                   'budget changed')]
        change = seconds - budget.seconds
        if change:
            written.append(rows.entry(
                project_id, resource, budget_models.REFILL, change,
                budget.period_start, now, actor=context.user_id,
                reason='hours per period changed from %s to %s' % (
                    units.hours(budget.seconds), units.hours(seconds))))
        conn.execute(rows.INSERT_ENTRIES, written)
        conn.execute(rows.BUDGETS.update()
                     .where(rows.BUDGETS.c.id == budget.id)
                     .values(seconds=seconds, refill=refill, cap=cap,
                             closed_meter=usage.meter_now, updated_at=now))
        _move_base(conn, usage, change, now)


def _start(conn, context, project_id, resource, usage, scope, now, period,
           seconds, refill, cap):
    """Open the books of a new budget of ``scope``, kept on ``usage``."""
    # Entries already booked for this period (a lease's charge left from
    # an earlier budget of the pair) count from the start.
    booked = conn.execute(
        sa.select(sa.func.coalesce(sa.func.sum(rows.ENTRIES.c.seconds), 0))
        .where(rows.ENTRIES.c.project_id == project_id,
               rows.ENTRIES.c.resource == resource,
               rows.ENTRIES.c.period_start <= period.start)).scalar_one()
    conn.execute(rows.BUDGETS.insert().values(
        project_id=project_id, resource=resource, seconds=seconds,
        refill=refill, cap=cap, scope=scope, period_start=period.start,
        closed_meter=usage.meter_now, created_at=now))
    conn.execute(rows.INSERT_ENTRIES, rows.entry(
        project_id, resource, budget_models.REFILL, seconds, period.start,
        now, actor=context.user_id, reason='budget set'))
    conn.execute(
        usage.table.update()
        .where(usage.table.c.id == usage.id)
        .ordered_values(
            *meter.advance(usage.table),
            ('budget_base', int(booked) + seconds + usage.meter_now),
            ('updated_at', now)),
        meter.binds(now))


@db_api.retry_on_conflict
def delete_budget(context, project_id, resource):
    """End the budget of ``resource`` of ``project_id`` (BudgetNotFound
    when it has none): its entries stay, its balance is closed."""
    now = models.utcnow()
    with db_api.writer_connection(context) as conn:
        usage, budget = _opened(conn, project_id, resource, now)
        written = [_closed_accrual(context, project_id, usage, budget, now,
                                   'budget deleted')]
        balance = usage.budget_base - usage.meter_now
        if balance:
            written.append(rows.entry(
                project_id, resource, budget_models.REFILL, -balance,
                budget.period_start, now, actor=context.user_id,
                reason='budget deleted'))
        conn.execute(rows.INSERT_ENTRIES, written)
        conn.execute(rows.BUDGETS.delete()
                     .where(rows.BUDGETS.c.id == budget.id))
        conn.execute(usage.table.update()
                     .where(usage.table.c.id == usage.id)
                     .values(budget_base=None, updated_at=now))


@db_api.retry_on_conflict
def credit(context, project_id, resource, hours, reason):
    """Credit ``hours`` (above 0) to this period's balance of the budget
    of ``resource`` of ``project_id``, for ``reason``; the entry written,
    as ``entries.view`` shows it. BudgetNotFound when it has none."""
    seconds = units.seconds('hours', hours, positive=True)
    reason = units.reason(reason)
    now = models.utcnow()
    with db_api.writer_connection(context) as conn:
        usage, budget = _opened(conn, project_id, resource, now)
        written = rows.entry(project_id, resource, budget_models.CREDIT,
                             seconds, budget.period_start, now,
                             actor=context.user_id, reason=reason)
        result = conn.execute(rows.INSERT_ENTRIES, written)
        _move_base(conn, usage, seconds, now)
    return entry_pages.view(dict(written, id=result.inserted_primary_key[0]))
