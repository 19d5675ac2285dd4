"""The rows of a project's books, locked in the ledger's order: the
project's ``quota_usages`` rows (in resource order), then its
``budgets`` rows; and the sums of its entries.

Each usage row is read with its meter now and at the start of the
current period (``cyquota.db.meter``'s binds ``_now_s``, ``_period_s``),
so that the books compute in whole unit-seconds what the row holds.
"""

import typing

import sqlalchemy as sa

from cyquota.db import budget_models
from cyquota.db import meter
from cyquota.db import models

USAGES = models.QuotaUsage.__table__
BUDGETS = budget_models.Budget.__table__
ENTRIES = budget_models.BudgetEntry.__table__

#: The meter of a usage row at the start of the current period: the mark
#: the first write of the period took, else (no write since) the meter
#: computed at that instant.
METER_AT_PERIOD = sa.case(
    (USAGES.c.marked_period == meter.PERIOD, USAGES.c.metered_mark),
    else_=meter.at(USAGES, meter.PERIOD))

#: The project's usage rows, locked in resource order: a row a resource
#: (a handful), every one, so that the statement reads no other table
#: (a subquery's rows could be locked too, out of order).
LOCK_USAGES = (
    sa.select(USAGES.c.id, USAGES.c.resource, USAGES.c.budget_base,
              meter.at(USAGES, meter.NOW).label('meter_now'),
              METER_AT_PERIOD.label('meter_at_period'))
    .where(USAGES.c.project_id == sa.bindparam('project_id'))
    .order_by(USAGES.c.resource)
    .with_for_update())

LOCK_BUDGETS = (
    sa.select(BUDGETS)
    .where(BUDGETS.c.project_id == sa.bindparam('project_id'))
    .order_by(BUDGETS.c.resource)
    .with_for_update())

INSERT_USAGE = USAGES.insert()
INSERT_ENTRIES = ENTRIES.insert()


class Usage(typing.NamedTuple):
    """A locked usage row: its id, ``budget_base`` and meter now and at
    the start of the current period, in unit-seconds."""

    id: int
    resource: str
    budget_base: typing.Optional[int]
    meter_now: int
    meter_at_period: int


def lock(conn, project_id, now_binds, extra=()):
    """The project's books locked: ``({resource: Usage}, {resource:
    budget row})``. Usage rows of the resources in ``extra`` that do not
    exist yet are inserted (a concurrent first use of the pair fails on
    the unique constraint and the caller's transaction is retried)."""
    usages = {row.resource: Usage(*row) for row in conn.execute(
        LOCK_USAGES, dict(now_binds, project_id=project_id))}
    for resource in extra:
        if resource not in usages:
            result = conn.execute(INSERT_USAGE, dict(
                project_id=project_id, resource=resource, used=0,
                reserved=0, created_at=models.utcnow()))
            usages[resource] = Usage(result.inserted_primary_key[0],
                                     resource, None, 0, 0)
    budgets = {row.resource: row for row in conn.execute(
        LOCK_BUDGETS, dict(project_id=project_id))}
    return usages, budgets


def entry(project_id, resource, kind, seconds, period_start, at,
          actor=None, reason=None, lease_id=None):
    """The values of one ``budget_entries`` row."""
    return dict(project_id=project_id, resource=resource, kind=kind,
                seconds=seconds, period_start=period_start, at=at,
                actor=actor, reason=reason, lease_id=lease_id)


def sums_after(conn, project_id, after, until):
    """``{(resource, period_start): seconds}`` of the project's entries of
    the periods in ``(after, until]``."""
    rows = conn.execute(
        sa.select(ENTRIES.c.resource, ENTRIES.c.period_start,
                  sa.func.sum(ENTRIES.c.seconds))
        .where(ENTRIES.c.project_id == project_id,
               ENTRIES.c.period_start > after,
               ENTRIES.c.period_start <= until)
        .group_by(ENTRIES.c.resource, ENTRIES.c.period_start))
    return {(resource, start): int(total) for resource, start, total in rows}
