"""The rows of a project's books, locked in the ledger's order: the
``tree_usages`` rows of the tree it is the root of (if any), its
``quota_usages`` rows (each in resource order), then its ``budgets``
rows; and the sums of its entries.

A budget's ``budget_base`` and meter are on the row of its scope: the
project's usage row, or (a root's budget under strict-two-level, which
covers the tree) the tree's row. Both tables carry the same meter
columns, so every expression here is one of either.

Each of those rows is read with its meter now and at the start of the
current period (``cyquota.db.meter``'s binds ``_now_s``, ``_period_s``),
so that the books compute in whole unit-seconds what the row holds.
"""

import typing

import sqlalchemy as sa

from cyquota.db import budget_models
from cyquota.db import meter
from cyquota.db import models

USAGES = models.QuotaUsage.__table__
TREES = models.TreeUsage.__table__
BUDGETS = budget_models.Budget.__table__
ENTRIES = budget_models.BudgetEntry.__table__


def meter_at_period(table):
    """The meter of a row of ``table`` at the start of the current
    period: the mark the first write of the period took, else (no write
    since) the meter computed at that instant."""
    return sa.case(
        (table.c.marked_period == meter.PERIOD, table.c.metered_mark),
        else_=meter.at(table, meter.PERIOD))


def _lock(table, holder):
    """The rows of ``table`` whose ``holder`` column is the project,
    locked in resource order: a row a resource (a handful), every one, so
    that the statement reads no other table (a subquery's rows could be
    locked too, out of order)."""
    return (
        sa.select(table.c.id, table.c.resource, table.c.budget_base,
                  meter.at(table, meter.NOW).label('meter_now'),
                  meter_at_period(table).label('meter_at_period'))
        .where(holder == sa.bindparam('project_id'))
        .order_by(table.c.resource)
        .with_for_update())


LOCK_TREES = _lock(TREES, TREES.c.root_id)
LOCK_USAGES = _lock(USAGES, USAGES.c.project_id)

LOCK_BUDGETS = (
    sa.select(BUDGETS)
    .where(BUDGETS.c.project_id == sa.bindparam('project_id'))
    .order_by(BUDGETS.c.resource)
    .with_for_update())

INSERT_USAGE = USAGES.insert()
INSERT_ENTRIES = ENTRIES.insert()

#: Every budget joined to the row that carries it (``of_holder``).
BUDGETED_ROWS = BUDGETS.outerjoin(USAGES, sa.and_(
    BUDGETS.c.scope == budget_models.SCOPE_PROJECT,
    USAGES.c.project_id == BUDGETS.c.project_id,
    USAGES.c.resource == BUDGETS.c.resource)).outerjoin(TREES, sa.and_(
        BUDGETS.c.scope == budget_models.SCOPE_TREE,
        TREES.c.root_id == BUDGETS.c.project_id,
        TREES.c.resource == BUDGETS.c.resource))


def of_holder(expression):
    """``expression`` (a function of a usage table) of the row that
    carries each budget of ``BUDGETED_ROWS``."""
    return sa.case((BUDGETS.c.scope == budget_models.SCOPE_TREE,
                    expression(TREES)), else_=expression(USAGES))


class Usage(typing.NamedTuple):
    """A locked row that may carry a budget: its id, ``budget_base`` and
    meter now and at the start of the current period, in unit-seconds,
    and its table."""

    id: int
    resource: str
    budget_base: typing.Optional[int]
    meter_now: int
    meter_at_period: int
    table: sa.Table


class Books(typing.NamedTuple):
    """A project's books, locked: ``{resource: Usage}`` of its usage rows
    and of its tree's rows (when it is a root), ``{resource: row}`` of
    its budgets."""

    usages: typing.Mapping[str, Usage]
    trees: typing.Mapping[str, Usage]
    budgets: typing.Mapping[str, typing.Any]

    def row(self, scope, resource):
        """The locked row of ``resource`` that a budget of ``scope`` is
        kept on (None: none)."""
        held = (self.trees if scope == budget_models.SCOPE_TREE
                else self.usages)
        return held.get(resource)

    def holder(self, budget):
        """The ``Usage`` that carries ``budget`` (None: no row carries
        it)."""
        row = self.row(budget.scope, budget.resource)
        return None if row is None or row.budget_base is None else row


def lock(conn, project_id, now_binds, extra=()):
    """The project's books locked (``Books``). Usage rows of the resources
    in ``extra`` that do not exist yet are inserted (a concurrent first
    use of the pair fails on the unique constraint and the caller's
    transaction is retried)."""
    params = dict(now_binds, project_id=project_id)
    trees = {row.resource: Usage(*row, table=TREES)
             for row in conn.execute(LOCK_TREES, params)}
    usages = {row.resource: Usage(*row, table=USAGES)
              for row in conn.execute(LOCK_USAGES, params)}
    for resource in extra:
        if resource not in usages:
            result = conn.execute(INSERT_USAGE, dict(
                project_id=project_id, resource=resource, used=0,
                reserved=0, created_at=models.utcnow()))
            usages[resource] = Usage(result.inserted_primary_key[0],
                                     resource, None, 0, 0, USAGES)
    budgets = {row.resource: row for row in conn.execute(
        LOCK_BUDGETS, dict(project_id=project_id))}
    return Books(usages, trees, budgets)


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
