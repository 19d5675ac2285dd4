"""The proof of the books (``cyquota-manage budget check``): for every
budget, ``budget_base`` of the row that carries it (its usage row, or its
tree's) equals the sum of its entries of the periods up to the one its
books are in, plus ``closed_meter`` (so the balance is the sum of the
entries less the open accrual); and no row has a ``budget_base`` without
a budget."""

import typing

import sqlalchemy as sa

from cyquota.budgets import rows
from cyquota.db import api as db_api
from cyquota.db import budget_models


class Disagreement(typing.NamedTuple):
    """What the books hold (``found``) where the entries say another value
    (``expected``), in unit-seconds; None: no value."""

    project_id: str
    resource: str
    what: str
    expected: typing.Optional[int]
    found: typing.Optional[int]


_BOOKED = (
    sa.select(sa.func.coalesce(sa.func.sum(rows.ENTRIES.c.seconds), 0))
    .where(rows.ENTRIES.c.project_id == rows.BUDGETS.c.project_id,
           rows.ENTRIES.c.resource == rows.BUDGETS.c.resource,
           rows.ENTRIES.c.period_start <= rows.BUDGETS.c.period_start)
    .scalar_subquery())

_BUDGETS = (
    sa.select(rows.BUDGETS.c.project_id, rows.BUDGETS.c.resource,
              (_BOOKED + rows.BUDGETS.c.closed_meter).label('expected'),
              rows.of_holder(lambda table: table.c.budget_base))
    .select_from(rows.BUDGETED_ROWS)
    .order_by(rows.BUDGETS.c.project_id, rows.BUDGETS.c.resource))


def _unbudgeted(table, holder, scope):
    """The rows of ``table`` with a ``budget_base`` that no budget of
    ``scope`` has."""
    return (
        sa.select(holder, table.c.resource, table.c.budget_base)
        .where(table.c.budget_base.is_not(None),
               ~sa.exists().where(
                   rows.BUDGETS.c.project_id == holder,
                   rows.BUDGETS.c.resource == table.c.resource,
                   rows.BUDGETS.c.scope == scope)))


_UNBUDGETED = (
    _unbudgeted(rows.USAGES, rows.USAGES.c.project_id,
                budget_models.SCOPE_PROJECT),
    _unbudgeted(rows.TREES, rows.TREES.c.root_id, budget_models.SCOPE_TREE))


def disagreements(context):
    """Every place the books disagree with their entries, in project and
    resource order (none when they all agree)."""
    with db_api.reader_connection(context) as conn:
        found = [Disagreement(project_id, resource, 'budget_base',
                              int(expected), base)
                 for project_id, resource, expected, base
                 in conn.execute(_BUDGETS)
                 if base is None or int(expected) != base]
        found += [Disagreement(project_id, resource, 'budget_base', None,
                               base)
                  for statement in _UNBUDGETED
                  for project_id, resource, base in conn.execute(statement)]
    return sorted(found)
