"""The proof of the books (``cyquota-manage budget check``): for every
budget, ``budget_base`` of its usage row equals the sum of its entries of
the periods up to the one its books are in, plus ``closed_meter`` (so
the balance is the sum of the entries less the open accrual); and no
usage row has a ``budget_base`` without a budget."""

import typing

import sqlalchemy as sa

from cyquota.budgets import rows
from cyquota.db import api as db_api


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

_THE_PAIR = sa.and_(rows.USAGES.c.project_id == rows.BUDGETS.c.project_id,
                    rows.USAGES.c.resource == rows.BUDGETS.c.resource)

_BUDGETS = (
    sa.select(rows.BUDGETS.c.project_id, rows.BUDGETS.c.resource,
              (_BOOKED + rows.BUDGETS.c.closed_meter).label('expected'),
              rows.USAGES.c.budget_base)
    .select_from(rows.BUDGETS.outerjoin(rows.USAGES, _THE_PAIR))
    .order_by(rows.BUDGETS.c.project_id, rows.BUDGETS.c.resource))

_UNBUDGETED = (
    sa.select(rows.USAGES.c.project_id, rows.USAGES.c.resource,
              rows.USAGES.c.budget_base)
    .where(rows.USAGES.c.budget_base.is_not(None),
           ~sa.exists().where(_THE_PAIR))
    .order_by(rows.USAGES.c.project_id, rows.USAGES.c.resource))


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
                  for project_id, resource, base
                  in conn.execute(_UNBUDGETED)]
    return sorted(found)
