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

Every level the lease is held at spends: the project's budget, and under
strict-two-level the root's budget of the whole tree (kept on the tree's
row), each charged and refunded alike in the name of its holder.

Runs in the lease event's transaction, after its rows are locked (their
``budget_base`` read with them): a pair without a budget costs no
statement; a budgeted one locks its holder's budget rows (after the usage
rows, the order of the books; the project's before its root's) and
answers the entries to write and the moves of ``budget_base``, which the
event writes with the rest of its writes (``LeaseHoldings.write``: one
statement on the servers).
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


def _locked_budgets(conn, holder_id, scope):
    """The budget rows of ``holder_id`` of ``scope``, locked
    (``rows.LOCK_BUDGETS``: all of the holder's, a handful, in the
    books' order), by resource."""
    return {row.resource: row for row in conn.execute(
        rows.LOCK_BUDGETS, dict(project_id=holder_id)) if row.scope == scope}


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
    ``budget_entries`` rows) and ``moves`` (``{(resource, level scope):
    unit-seconds}`` added to the levels' ``budget_base``)."""

    entries: list
    moves: typing.Mapping[tuple[str, str], int]


NOTHING = Spending([], {})


def move(conn, levels, lease_id, before, after, now, actor, reason):
    """What charges and refunds the budgets of the levels a lease is held
    at for lease ``lease_id`` going from plan ``before`` to plan
    ``after`` (None: none) at ``now``, by ``actor`` for ``reason``, as a
    ``Spending`` to write. ``levels``: ``{resource: [Level]}`` of the
    event's locked rows, the project's first (``model.Level``, each
    ``counts`` with ``budget_base`` and the meter as locked); a level
    whose row has a budget is charged in the name of its holder (the
    project, or its tree's root).

    :raises BudgetExhausted: (403) a charge does not fit its period.
    """
    budgeted = {}
    for resource, each in levels.items():
        for level in each:
            if level.counts.budget_base is not None:
                budgeted.setdefault((level.holder_id, level.scope),
                                    {})[resource] = level.counts
    if not budgeted:
        return NOTHING
    change = spread(after, now)
    change.subtract(spread(before, now))
    entries, moves = [], collections.Counter()
    # The project's budgets first, then its root's: the books' order.
    for (holder_id, scope), counts in sorted(
            budgeted.items(),
            key=lambda item: item[0][1] != budget_models.SCOPE_PROJECT):
        spent = _move(conn, holder_id, scope, counts, change, lease_id, now,
                      actor, reason)
        entries += spent.entries
        moves.update({(resource, scope): seconds
                      for resource, seconds in spent.moves.items()})
    return Spending(entries, dict(moves))


def _move(conn, holder_id, scope, counts, change, lease_id, now, actor,
          reason):
    """``move`` at one level: the budgets of ``holder_id`` of ``scope``,
    whose rows are ``counts`` (``{resource: row}``); ``moves`` by
    resource."""
    change = {key: seconds for key, seconds in change.items()
              if seconds and key[0] in counts}
    if not change:
        return NOTHING
    budgets = _locked_budgets(conn, holder_id, scope)
    change = {key: seconds for key, seconds in sorted(change.items())
              if key[0] in budgets}
    resources = {resource for resource, _p in change}
    first = min((budgets[r].period_start for r in resources), default=None)
    charged = booked = {}
    if any(seconds < 0 for seconds in change.values()):
        charged = _sums(conn, holder_id, resources, first, lease_id)
    if any(seconds > 0 and start > budgets[resource].period_start
           for (resource, start), seconds in change.items()):
        booked = _sums(conn, holder_id, resources, first)
    now_s = meter.seconds(now)
    entries, moves = [], collections.Counter()
    for (resource, start), seconds in change.items():
        current = start == budgets[resource].period_start
        if seconds > 0:
            left = (meter.balance_at(counts[resource], now_s) if current
                    else budgets[resource].seconds
                    + booked.get((resource, start), 0))
            if seconds > left:
                raise units.exhausted(holder_id, resource, start, left,
                                      seconds)
            kind = budget_models.LEASE_CHARGE
            seconds = -seconds
        else:
            seconds = min(-seconds,
                          max(0, -charged.get((resource, start), 0)))
            kind = budget_models.LEASE_REFUND
        if not seconds:
            continue
        entries.append(rows.entry(holder_id, resource, kind, seconds, start,
                                  now, actor=actor, reason=reason,
                                  lease_id=lease_id))
        if current:
            moves[resource] += seconds
    return Spending(entries, dict(moves))
