"""Hours as callers give and read them, unit-seconds as the books keep
them: an hour of one accelerator is 3,600 unit-seconds.

A number of hours has at most six decimals (an exact JSON number, as
every answer shows hours: ``round(seconds / 3600, 6)``), is at least 0
and at most ``MAX_HOURS``; it is kept rounded to the nearest second.
"""

import decimal

from cyquota.db import budget_models
from cyquota.db import meter
from cyquota import exception
from cyquota.lease_tables import calendar

#: The most hours a budget, cap or credit may name: far above any real
#: budget, far below what the 64-bit columns hold in seconds.
MAX_HOURS = 1_000_000_000
DECIMALS = meter.HOUR_DECIMALS
MAX_REASON = 255


#: ``seconds`` (unit-seconds, an int) as hours, a JSON number.
hours = meter.hours


def seconds(field, value, positive=False):
    """The unit-seconds of ``value`` hours given as ``field``; InvalidBudget
    naming ``field`` unless it is a number of at most six decimals in
    ``[0, MAX_HOURS]`` (above 0 with ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise exception.InvalidBudget(
            field=field, reason='%r is not a number of hours' % (value,))
    exact = decimal.Decimal(repr(value))
    if not exact.is_finite():
        raise exception.InvalidBudget(
            field=field, reason='%r is not a number of hours' % (value,))
    exponent = exact.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -DECIMALS:
        raise exception.InvalidBudget(
            field=field, reason='%r has more than %d decimals'
                                % (value, DECIMALS))
    low = 'above 0' if positive else 'at least 0'
    if exact < 0 or (positive and exact == 0) or exact > MAX_HOURS:
        raise exception.InvalidBudget(
            field=field, reason='%r is not %s and at most %d hours'
                                % (value, low, MAX_HOURS))
    return int((exact * 3600).to_integral_value(decimal.ROUND_HALF_EVEN))


def refill(value):
    """``reset`` or ``carry``; InvalidBudget naming ``refill`` else."""
    if value not in budget_models.REFILLS:
        raise exception.InvalidBudget(
            field='refill', reason='%r is not one of %s'
                                   % (value, ', '.join(budget_models.REFILLS)))
    return value


def cap(value, budget_seconds, refill_kind):
    """The unit-seconds of the ``cap`` of a budget of ``budget_seconds``
    (None: no cap); a cap is at least the budget, and only a ``carry``
    refill has one."""
    if value is None:
        return None
    if refill_kind != budget_models.REFILL_CARRY:
        raise exception.InvalidBudget(
            field='cap', reason='only a carry refill has a cap; a %s refill '
                                'leaves the balance at hours' % refill_kind)
    capped = seconds('cap', value)
    if capped < budget_seconds:
        raise exception.InvalidBudget(
            field='cap', reason='%r is below hours' % (value,))
    return capped


def reason(value):
    """A credit's reason: 1 to 255 characters."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_REASON:
        raise exception.InvalidBudget(
            field='reason', reason='expected 1 to %d characters'
                                   % MAX_REASON)
    return value


def exhausted(project_id, resource, period_start, balance, requested):
    """The ``BudgetExhausted`` of ``requested`` unit-seconds of
    ``resource`` that the balance (``balance`` unit-seconds) of the period
    beginning at ``period_start`` does not hold."""
    period = meter.current_periods().of(period_start)
    return exception.BudgetExhausted(
        project_id=project_id, resource=resource,
        period_start=calendar.isotime(period.start),
        period_end=calendar.isotime(period.end),
        balance_hours=hours(balance), requested_hours=hours(requested))
