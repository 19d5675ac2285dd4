"""What leases spend of budgets (SPEC 3.8): a lease is charged ``amount x
its window`` when it is accepted, a promise as the quota's, and refunded
for what it will not use when it ends early or shrinks.

A lease event moves the lease's *plan* (``Plan``: its amounts over its
window) from what it was to what it becomes; from now on, the two plans
differ by some unit-seconds in each period of each resource
(``periods.Periods.parts``). Where the new plan takes more, that is a
``lease_charge`` entry of the period, refused as ``BudgetExhausted`` when
it does not fit the period's balance; where it takes less, a
``lease_refund`` entry, never more than the lease was charged in that
period (a lease accepted before its budget was set was charged nothing
and is refunded nothing). Hours before now are spent either way: a plan
counts only from now on.

A charge of the period the books are in moves ``budget_base`` at once;
one of a later period is an entry booked for it, which the roll-over
adds when that period begins (``rollover``). The balance a later period
will begin with is not known before then: a charge fits it when it fits
the period's hours plus what is already booked for it (exact for a
``reset`` refill; for ``carry``, what a balance of zero would carry).

Runs in the lease event's transaction, after its usage rows are locked
(their ``budget_base`` read with them): a pair without a budget costs no
statement; a budgeted one locks the project's budget rows (after the
usage rows, the order of the books) and answers the entries to write and
the moves of ``budget_base``, which the event writes with the rest of
its writes (``LeaseHoldings.write``: one statement on the servers).
"""

import collections
import datetime
import typing

import sqlalchemy as sa

from cyquota.budgets import rows
from cyquota.budgets import units
from cyquota.db import budget_models
from cyquota.db import meter

#: What ``entry.reason`` says of each lease event.
ACCEPTED = 'lease accepted'
CHANGED = 'lease changed'
ENDED = 'lease ended early'


class Plan(typing.NamedTuple):
    """A lease's amounts (``{resource: amount}``) over ``[start, end)``."""

    amounts: typing.Mapping[str, int]
    start: datetime.datetime
    end: datetime.datetime


def spread(plan, now):
    """``{(resource, period start): unit-seconds}`` that ``plan`` (None:
    nothing) takes from ``now`` on."""
    taken: collections.Counter = collections.Counter()
    if plan is None:
        return taken
    for part in meter.current_periods().parts(max(plan.start, now), plan.end):
        for resource, amount in plan.amounts.items():
            taken[resource, part.period.start] += amount * part.seconds()
    return taken


def _locked_budgets(conn, project_id):
    """The project's budget rows, locked (``rows.LOCK_BUDGETS``: all of
    them, a handful, in the books' order), by resource."""
    return {row.resource: row for row in conn.execute(
        rows.LOCK_BUDGETS, dict(project_id=project_id))}


def _sums(conn, project_id, resources, after, lease_id=None):
    """``{(resource, period start): seconds}`` of the entries of the
    periods from ``after`` on (of the lease ``lease_id`` only, if given;
    the project's index finds them, a refund being rare)."""
    query = (sa.select(rows.ENTRIES.c.resource, rows.ENTRIES.c.period_start,
                       sa.func.sum(rows.ENTRIES.c.seconds))
             .where(rows.ENTRIES.c.project_id == project_id,
                    rows.ENTRIES.c.resource.in_(sorted(resources)),
                    rows.ENTRIES.c.period_start >= after)
             .group_by(rows.ENTRIES.c.resource, rows.ENTRIES.c.period_start))
    if lease_id is not None:
        query = query.where(rows.ENTRIES.c.lease_id == lease_id)
    return {(resource, start): int(total)
            for resource, start, total in conn.execute(query)}


class Spending(typing.NamedTuple):
    """What a lease event writes to the books: ``entries`` (values of
    ``budget_entries`` rows) and ``moves`` (``{resource: unit-seconds}``
    added to the usage rows' ``budget_base``)."""

    entries: list
    moves: typing.Mapping[str, int]


NOTHING = Spending([], {})


def move(conn, project_id, usages, lease_id, before, after, now, actor,
         reason):
    """What charges and refunds the budgets of ``project_id`` for lease
    ``lease_id`` going from plan ``before`` to plan ``after`` (None:
    none) at ``now``, by ``actor`` for ``reason``, as a ``Spending`` to
    write. ``usages``: the project's usage rows locked by the event
    (``{resource: row}``, each with ``budget_base`` and
    ``balance(now_s)``).

    :raises BudgetExhausted: (403) a charge does not fit its period.
    """
    budgeted = {resource for resource, usage in usages.items()
                if usage.budget_base is not None}
    if not budgeted:
        return NOTHING
    change = spread(after, now)
    change.subtract(spread(before, now))
    change = {key: seconds for key, seconds in change.items()
              if seconds and key[0] in budgeted}
    if not change:
        return NOTHING
    budgets = _locked_budgets(conn, project_id)
    change = {key: seconds for key, seconds in sorted(change.items())
              if key[0] in budgets}
    resources = {resource for resource, _p in change}
    first = min((budgets[r].period_start for r in resources), default=None)
    charged = booked = {}
    if any(seconds < 0 for seconds in change.values()):
        charged = _sums(conn, project_id, resources, first, lease_id)
    if any(seconds > 0 and start > budgets[resource].period_start
           for (resource, start), seconds in change.items()):
        booked = _sums(conn, project_id, resources, first)
    now_s = meter.seconds(now)
    entries, moves = [], collections.Counter()
    for (resource, start), seconds in change.items():
        current = start == budgets[resource].period_start
        if seconds > 0:
            left = (usages[resource].balance(now_s) if current
                    else budgets[resource].seconds
                    + booked.get((resource, start), 0))
            if seconds > left:
                raise units.exhausted(project_id, resource, start, left,
                                      seconds)
            kind = budget_models.LEASE_CHARGE
            seconds = -seconds
        else:
            seconds = min(-seconds,
                          max(0, -charged.get((resource, start), 0)))
            kind = budget_models.LEASE_REFUND
        if not seconds:
            continue
        entries.append(rows.entry(project_id, resource, kind, seconds, start,
                                  now, actor=actor, reason=reason,
                                  lease_id=lease_id))
        if current:
            moves[resource] += seconds
    return Spending(entries, dict(moves))
