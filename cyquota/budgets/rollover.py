"""The roll-over: each budget's period closed and the next one refilled,
exactly once per period whatever the number of conductors.

For a budget whose books are in period A when period B has begun, in one
transaction per project (its tree's rows and its usage rows locked, then
its budgets: ``rows.lock``), with the meter at B of the row that carries
the budget (``rows.meter_at_period``: the mark the first write of B took,
else the meter computed at B):

- an ``accrual`` entry closes A: ``-(meter(B) - closed_meter)``;
- a ``refill`` entry opens B: ``reset`` tops the balance at B up (or
  down) to ``seconds``; ``carry`` adds ``seconds``, or with a cap
  ``max(0, min(seconds, cap - balance(B)))``;
- the entries already booked for the periods after A up to B (leases'
  charges of B) take effect with it;
- ``budgets.period_start`` moves from A to B by a compare-and-set, and
  ``closed_meter`` to meter(B), so that a second conductor finds nothing
  to do (its update matches no row and its transaction is rolled back).

A conductor down for longer than a whole period closes the periods it
missed as one, at B, with one refill.

A project costs the same statements whatever its budgets: the locks of
its tree's rows, its usage rows and budgets, the sums of its pending
entries, the compare-and-set, the entries' insert and the update of the
rows that carry them (one per table).
"""

from oslo_log import log as logging
import sqlalchemy as sa

from cyquota.budgets import rows
from cyquota.db import api as db_api
from cyquota.db import budget_models
from cyquota.db import meter
from cyquota.db import models

LOG = logging.getLogger(__name__)

#: Projects read at once when looking for books to roll over.
PAGE = 500

_REASON = 'period start'


class _Lost(Exception):
    """Another conductor moved these books on first."""


def refill(budget, balance):
    """The refill at a period's start of ``budget`` (its row) whose balance
    then is ``balance`` unit-seconds."""
    if budget.refill == budget_models.REFILL_RESET:
        return budget.seconds - balance
    if budget.cap is None:
        return budget.seconds
    return max(0, min(budget.seconds, budget.cap - balance))


def roll(conn, project_id, now, books):
    """Move the project's ``books`` (``rows.Books``, locked) to the period
    of ``now``; whether any budget moved. Raises ``_Lost`` when another
    transaction moved them first (the caller's transaction must end)."""
    period = meter.current_periods().of(now)
    due = [budget for _resource, budget in sorted(books.budgets.items())
           if budget.period_start < period.start
           and books.holder(budget) is not None]
    if not due:
        return False
    pending = rows.sums_after(conn, project_id,
                              min(budget.period_start for budget in due),
                              period.start)
    entries, closed, added = [], {}, {}
    for budget in due:
        usage = books.holder(budget)
        at_start = usage.meter_at_period
        balance = usage.budget_base - at_start
        topped = refill(budget, balance)
        entries.append(rows.entry(
            project_id, budget.resource, budget_models.ACCRUAL,
            -(at_start - budget.closed_meter), budget.period_start,
            period.start, reason=_REASON))
        entries.append(rows.entry(
            project_id, budget.resource, budget_models.REFILL, topped,
            period.start, period.start, reason=_REASON))
        closed[budget.id] = at_start
        added.setdefault(usage.table, {})[usage.id] = topped + sum(
            total for (resource, start), total in pending.items()
            if resource == budget.resource and start > budget.period_start)
    moved = conn.execute(
        rows.BUDGETS.update()
        .where(sa.or_(*(sa.and_(rows.BUDGETS.c.id == budget.id,
                                rows.BUDGETS.c.period_start
                                == budget.period_start)
                        for budget in due)))
        .values(period_start=period.start,
                closed_meter=sa.case(closed, value=rows.BUDGETS.c.id),
                updated_at=now))
    if moved.rowcount != len(due):
        raise _Lost()
    conn.execute(rows.INSERT_ENTRIES, entries)
    for table, by_id in added.items():
        conn.execute(
            table.update()
            .where(table.c.id.in_(list(by_id)))
            .values(budget_base=table.c.budget_base
                    + sa.case(by_id, value=table.c.id),
                    updated_at=now))
    return True


@db_api.retry_on_conflict
def roll_project(context, project_id, now=None):
    """Roll the project's books over to the period of ``now`` (default:
    now), in a transaction of its own; whether this call moved them."""
    now = now or models.utcnow()
    try:
        with db_api.writer_connection(context) as conn:
            books = rows.lock(conn, project_id, meter.binds(now))
            return roll(conn, project_id, now, books)
    except _Lost:
        return False


def due_projects(context, now, after=None):
    """A page of the projects (after the id ``after``) with books in a
    period before that of ``now``, in id order."""
    start = meter.current_periods().of(now).start
    query = (sa.select(rows.BUDGETS.c.project_id).distinct()
             .where(rows.BUDGETS.c.period_start < start)
             .order_by(rows.BUDGETS.c.project_id).limit(PAGE))
    if after is not None:
        query = query.where(rows.BUDGETS.c.project_id > after)
    with db_api.reader_connection(context) as conn:
        return [project_id for (project_id,) in conn.execute(query)]


def roll_all(context, now=None):
    """Roll every project's books over to the period of ``now`` (default:
    now); the number of projects this call moved."""
    now = now or models.utcnow()
    moved, after = 0, None
    while True:
        projects = due_projects(context, now, after)
        for project_id in projects:
            moved += roll_project(context, project_id, now)
        if len(projects) < PAGE:
            break
        after = projects[-1]
    if moved:
        LOG.info('Rolled the budgets of %d project(s) over to the period '
                 'of %s', moved, now.isoformat())
    return moved
