"""Budgets spent: a balance at or below zero is told once per period of
its books, by a notification (``accelerator.budget.exhausted``) and a
metric (``cyquota_budget_exhaustions``), after the transaction that
marks it told (``budgets.exhausted_period``, a compare-and-set, so one
conductor tells it)."""

import sqlalchemy as sa

from cyquota.budgets import rows
from cyquota.budgets import units
from cyquota.db import api as db_api
from cyquota.db import meter
from cyquota.db import models
from cyquota import metrics
from cyquota import notifications

_UNTOLD = sa.or_(rows.BUDGETS.c.exhausted_period.is_(None),
                 rows.BUDGETS.c.exhausted_period
                 < rows.BUDGETS.c.period_start)

_BALANCE = rows.of_holder(meter.balance)
_SPENT = (
    sa.select(rows.BUDGETS.c.id, rows.BUDGETS.c.project_id,
              rows.BUDGETS.c.resource, rows.BUDGETS.c.period_start,
              _BALANCE.label('balance'))
    .select_from(rows.BUDGETED_ROWS)
    .where(_UNTOLD, _BALANCE <= 0)
    .order_by(rows.BUDGETS.c.id))


def _mark(context, budget):
    """Mark ``budget``'s period told; whether this call did."""
    with db_api.writer_connection(context) as conn:
        return conn.execute(
            rows.BUDGETS.update()
            .where(rows.BUDGETS.c.id == budget.id,
                   rows.BUDGETS.c.period_start == budget.period_start,
                   _UNTOLD)
            .values(exhausted_period=budget.period_start)).rowcount == 1


def tell(context, now=None):
    """Tell each budget spent at ``now`` (default: now) and not yet told
    in its period; how many were told."""
    now = now or models.utcnow()
    periods = meter.current_periods()
    with db_api.reader_connection(context) as conn:
        spent = conn.execute(_SPENT, meter.binds(now)).all()
    told = 0
    for budget in spent:
        if not _mark(context, budget):
            continue
        period = periods.of(budget.period_start)
        notifications.budget_exhausted(
            context, budget.project_id, budget.resource, period.start,
            period.end, units.hours(budget.balance))
        metrics.count_budget_exhausted(budget.resource)
        told += 1
    return told
