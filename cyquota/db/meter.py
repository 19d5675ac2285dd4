"""The accelerator-seconds meter of a usage row (SPEC 3.8), as SQL.

Each ``quota_usages`` row meters what its project holds by attaches
(``used - leased``: an active lease is charged when it is accepted, never
metered): ``metered`` is the unit-seconds held up to ``metered_at`` (Unix
seconds). Every statement that changes ``used`` or ``leased`` first moves
the meter to now in the same write (``advance``), so the meter at any
instant is ``metered + (used - leased) x (instant - metered_at)``
(``at``): exact to the second, O(1) per change, no sweep.

The same write keeps the meter at the start of the current period
(``metered_mark``, for period ``marked_period``) when it is the first
change of that period: the roll-over then closes the period before at
that exact value, however late it runs.

A budgeted row also carries ``budget_base`` (the balance plus the meter),
so that the remaining balance is ``budget_base - at(now)``, read on the
very row a reserve changes (``allows``).

The binds are ``_now_s`` and ``_period_s``: now and the start of the
current period, in Unix seconds (``seconds``).
"""

import calendar
import datetime
import functools

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import periods

#: Now, and the start of the period that holds it (``periods``), in Unix
#: seconds.
NOW = sa.bindparam('_now_s', type_=sa.BigInteger)
PERIOD = sa.bindparam('_period_s', type_=sa.BigInteger)


def seconds(instant: datetime.datetime) -> int:
    """Unix seconds of a naive UTC ``instant`` (its fraction dropped)."""
    return calendar.timegm(instant.timetuple())


def holding(row):
    """What the usage ``row`` (a table or CTE) holds that is metered."""
    return row.c.used - row.c.leased


def value_at(metered, metered_at, holding_now, instant):
    """``at`` of a row read into Python (``instant`` in Unix seconds):
    what the database would compute, for a check made on a locked row."""
    if metered_at is not None and metered_at < instant:
        return metered + holding_now * (instant - metered_at)
    return metered


def balance_at(row, instant):
    """The remaining balance at ``instant`` (Unix seconds) of a row read
    into Python with ``budget_base``, ``metered``, ``metered_at``,
    ``used`` and ``leased``, as locked; None where it has no budget."""
    if row.budget_base is None:
        return None
    return row.budget_base - value_at(row.metered, row.metered_at,
                                      row.used - row.leased, instant)


def at(row, instant):
    """The meter of ``row`` at ``instant`` (an SQL expression of Unix
    seconds, not before ``metered_at``; a row never metered has only
    ``metered``)."""
    return sa.case(
        (row.c.metered_at < instant,
         row.c.metered + holding(row) * (instant - row.c.metered_at)),
        else_=row.c.metered)


def advance(row, now=NOW, period=PERIOD):
    """The SET terms that move the meter of ``row`` to ``now``, as
    ``(column name, expression)`` pairs in the order to write them: before
    any change of ``used`` or ``leased`` (MySQL and MariaDB evaluate SET
    terms left to right, each seeing the ones before), and each before
    the terms it reads. Give them to ``Update.ordered_values`` first."""
    return [
        ('metered_mark', sa.case(
            (sa.func.coalesce(row.c.marked_period, -1) < period,
             at(row, period)),
            else_=row.c.metered_mark)),
        ('metered', at(row, now)),
        # Never back: a clock behind another host's meters nothing.
        ('metered_at', sa.case((row.c.metered_at > now, row.c.metered_at),
                               else_=now)),
        ('marked_period', sa.case((row.c.marked_period > period,
                                   row.c.marked_period), else_=period)),
    ]


def write_counts(table):
    """The UPDATE of a row of ``table`` (a usage table: the projects' or
    the trees') by ``_id`` to the counts ``_used``, ``_reserved`` and
    ``_leased`` at ``_now``, its meter moved first (binds ``binds``)."""
    return (table.update()
            .where(table.c.id == sa.bindparam('_id'))
            .ordered_values(*advance(table),
                            ('used', sa.bindparam('_used')),
                            ('reserved', sa.bindparam('_reserved')),
                            ('leased', sa.bindparam('_leased')),
                            ('updated_at', sa.bindparam('_now'))))


#: Hours are shown to a millionth (the API takes at most this many decimals).
HOUR_DECIMALS = 6


def hours(unit_seconds: int) -> float:
    """Unit-seconds as hours, a JSON number."""
    return round(unit_seconds / 3600, HOUR_DECIMALS)


def balance(row, now=NOW):
    """The remaining balance of a budgeted ``row`` at ``now`` in
    unit-seconds (NULL where no budget is set)."""
    return row.c.budget_base - at(row, now)


def allows(row, now=NOW):
    """Whether ``row`` may take more holdings at ``now``: no budget, or a
    balance above zero (SPEC 3.8: at or below zero refuses)."""
    return sa.or_(row.c.budget_base.is_(None), balance(row, now) > 0)


def binds(now: datetime.datetime) -> dict:
    """The meter's binds of a statement run at ``now``, in the period of
    ``[budgets] period`` that holds it."""
    return {'_now_s': seconds(now), '_period_s': period_seconds(now)}


def period_seconds(now: datetime.datetime) -> int:
    """``_period_s`` of ``binds``: the start of the period that holds
    ``now``, in Unix seconds."""
    return seconds(current_periods().of(now).start)


@functools.lru_cache(maxsize=4)
def _periods(spec):
    return periods.Periods(spec)


def current_periods() -> periods.Periods:
    """The periods of ``[budgets] period`` as configured now."""
    return _periods(CONF.budgets.period)
