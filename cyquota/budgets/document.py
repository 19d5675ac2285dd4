"""What a project's budgets show: the document of ``GET
/v1/budgets/{project_id}`` (SPEC 3.8) and the remaining hours the usage
document adds, both read at one instant, in hours.

For each budgeted resource, in the period the books are in:
``spent_hours`` is what attaches spent (the accruals closed in the
period and the open one), ``charged_hours`` the leases' charges less
their refunds, ``credited_hours`` the credits, ``remaining_hours`` the
balance now (``budget_base - meter(now)``) and ``next_refill`` the end
of the period.
"""

import sqlalchemy as sa

from cyquota.budgets import rows
from cyquota.budgets import units
from cyquota.db import api as db_api
from cyquota.db import budget_models
from cyquota.db import meter
from cyquota.db import models

_BASE = rows.of_holder(lambda table: table.c.budget_base)
_BUDGETED = (
    sa.select(rows.BUDGETS, _BASE.label('budget_base'),
              rows.of_holder(lambda table: meter.at(table, meter.NOW))
              .label('meter_now'))
    .select_from(rows.BUDGETED_ROWS)
    .where(rows.BUDGETS.c.project_id == sa.bindparam('project_id'),
           _BASE.is_not(None))
    .order_by(rows.BUDGETS.c.resource))

#: The sums by kind of the entries of each budget's current period.
_PERIOD_SUMS = (
    sa.select(rows.ENTRIES.c.resource, rows.ENTRIES.c.kind,
              sa.func.sum(rows.ENTRIES.c.seconds))
    .join(rows.BUDGETS, sa.and_(
        rows.BUDGETS.c.project_id == rows.ENTRIES.c.project_id,
        rows.BUDGETS.c.resource == rows.ENTRIES.c.resource,
        rows.BUDGETS.c.period_start == rows.ENTRIES.c.period_start))
    .where(rows.ENTRIES.c.project_id == sa.bindparam('project_id'))
    .group_by(rows.ENTRIES.c.resource, rows.ENTRIES.c.kind))

_SPENT = (budget_models.ACCRUAL,)
_CHARGED = (budget_models.LEASE_CHARGE, budget_models.LEASE_REFUND)
_CREDITED = (budget_models.CREDIT,)


def _budgets(conn, project_id, now):
    return conn.execute(_BUDGETED, dict(meter.binds(now),
                                        project_id=project_id)).all()


def show(context, project_id, now=None):
    """``{"project_id", "resources": {resource: {...}}}`` of the project's
    budgets at ``now`` (default: now); no resources when it has none."""
    now = now or models.utcnow()
    periods = meter.current_periods()
    with db_api.reader_connection(context) as conn:
        budgets = _budgets(conn, project_id, now)
        sums = {}
        if budgets:
            for resource, kind, total in conn.execute(
                    _PERIOD_SUMS, dict(project_id=project_id)):
                sums[resource, kind] = int(total)

    def period_sum(resource, kinds):
        return sum(sums.get((resource, kind), 0) for kind in kinds)

    resources = {}
    for budget in budgets:
        period = periods.of(budget.period_start)
        open_accrual = budget.meter_now - budget.closed_meter
        resources[budget.resource] = {
            'hours': units.hours(budget.seconds),
            'refill': budget.refill,
            'cap': None if budget.cap is None else units.hours(budget.cap),
            'period_start': period.start,
            'period_end': period.end,
            'spent_hours': units.hours(
                open_accrual - period_sum(budget.resource, _SPENT)),
            'charged_hours': units.hours(
                -period_sum(budget.resource, _CHARGED)),
            'credited_hours': units.hours(
                period_sum(budget.resource, _CREDITED)),
            'remaining_hours': units.hours(
                budget.budget_base - budget.meter_now),
            'next_refill': period.end,
        }
    return {'project_id': project_id, 'resources': resources}
