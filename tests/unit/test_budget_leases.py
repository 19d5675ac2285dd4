"""What leases spend of budgets, on SQLite with a clock the tests move: a
lease is charged its amount over its window when accepted, each period
its part, refused when a part does not fit, and refunded what it will not
use; the books prove themselves after each step."""

import datetime

import pytest

from cyquota.budgets import books
from cyquota.budgets import check
from cyquota.budgets import document
from cyquota.budgets import entries
from cyquota.budgets import rollover
from cyquota.conf import CONF
from cyquota import exception
from cyquota import leases
from tests.unit.test_engine import START, clock  # noqa: F401,H301
from tests.unit.test_leases import at, lease, pool  # noqa: F401,H301

LEASES = leases.LEASES


@pytest.fixture
def days(pool, ctx):  # noqa: F811 (the fixture imported above)
    """Daily periods; START is noon, so a day holds 12 hours from it.
    A budget of 20 FPGA-hours a day for p1."""
    CONF.set_override('period', 'P1D', 'budgets')
    books.set_budget(ctx, 'p1', 'FPGA', 20)
    yield pool
    CONF.clear_override('period', 'budgets')


def shown(ctx):
    return document.show(ctx, 'p1')['resources']['FPGA']


def kinds(ctx):
    return [(e['kind'], e['hours'], e['lease_id'] is not None)
            for e in entries.page(ctx, 'p1', 100)]


def test_a_lease_is_charged_its_window_when_accepted(days, ctx):
    made = lease(ctx, 2, at(1), at(4))
    budget = shown(ctx)
    assert budget['charged_hours'] == 6
    assert budget['remaining_hours'] == 14
    charge = entries.page(ctx, 'p1', 1)[0]
    assert (charge['kind'], charge['hours'], charge['lease_id'],
            charge['reason']) == ('lease_charge', -6, made['id'],
                                  'lease accepted')
    assert check.disagreements(ctx) == []


def test_an_active_lease_is_charged_not_metered(days, ctx):
    lease(ctx, 2, 'now', at(3))
    days.clock.advance(2 * 3600)
    budget = shown(ctx)
    assert (budget['charged_hours'], budget['spent_hours'],
            budget['remaining_hours']) == (6, 0, 14)


def test_a_charge_over_the_balance_is_refused_and_stores_nothing(days, ctx):
    lease(ctx, 2, at(1), at(8))  # 14 of 20
    with pytest.raises(exception.BudgetExhausted) as refused:
        lease(ctx, 1, at(1), at(8))  # 7 more
    assert refused.value.kwargs == {
        'project_id': 'p1', 'resource': 'FPGA',
        'period_start': '2030-01-01T00:00:00+00:00',
        'period_end': '2030-01-02T00:00:00+00:00',
        'balance_hours': 6.0, 'requested_hours': 7.0}
    assert refused.value.code == 403
    assert len(LEASES.list(ctx, 'p1')) == 1
    assert shown(ctx)['remaining_hours'] == 6
    lease(ctx, 1, at(1), at(7))  # 6: exactly what is left
    assert shown(ctx)['remaining_hours'] == 0


def test_a_lease_across_midnight_charges_each_day_its_part(days, ctx):
    lease(ctx, 1, at(10), at(16))  # 2 hours today, 4 tomorrow
    assert shown(ctx)['charged_hours'] == 2
    days.clock.advance(12 * 3600)  # midnight
    assert rollover.roll_all(ctx) == 1
    budget = shown(ctx)
    assert budget['period_start'] == datetime.datetime(2030, 1, 2)
    assert (budget['charged_hours'], budget['remaining_hours']) == (4, 16)
    assert check.disagreements(ctx) == []


def test_a_later_day_refuses_what_its_hours_do_not_hold(days, ctx):
    lease(ctx, 1, at(12), at(30))  # tomorrow, 18 of its 20
    with pytest.raises(exception.BudgetExhausted) as refused:
        lease(ctx, 1, at(13), at(16))
    assert refused.value.kwargs['period_start'] == '2030-01-02T00:00:00+00:00'
    assert refused.value.kwargs['balance_hours'] == 2
    assert shown(ctx)['remaining_hours'] == 20  # today's is whole


def test_an_early_end_refunds_the_rest_of_the_window(days, ctx):
    made = lease(ctx, 2, 'now', at(5))  # 10 hours
    days.clock.advance(3600)
    LEASES.delete(ctx, made['id'])
    budget = shown(ctx)
    assert (budget['charged_hours'], budget['remaining_hours']) == (2, 18)
    assert kinds(ctx)[0] == ('lease_refund', 8, True)
    assert check.disagreements(ctx) == []


def test_a_cancelled_lease_is_refunded_every_period(days, ctx):
    made = lease(ctx, 1, at(10), at(16))
    LEASES.delete(ctx, made['id'])
    assert shown(ctx)['charged_hours'] == 0
    days.clock.advance(12 * 3600)
    rollover.roll_all(ctx)
    assert (shown(ctx)['charged_hours'], shown(ctx)['remaining_hours']) == (
        0, 20)
    assert check.disagreements(ctx) == []


def test_a_change_charges_or_refunds_the_difference(days, ctx):
    made = lease(ctx, 1, at(1), at(5))  # 4
    LEASES.update(ctx, made['id'], {'end_date': at(3)})  # 2
    assert shown(ctx)['charged_hours'] == 2
    LEASES.update(ctx, made['id'], {'reservations': [
        {'id': made['reservations'][0]['id'], 'amount': 3}]})  # 6
    assert shown(ctx)['charged_hours'] == 6
    assert [kind for kind, _h, _l in kinds(ctx)][:3] == [
        'lease_charge', 'lease_refund', 'lease_charge']
    with pytest.raises(exception.BudgetExhausted):
        LEASES.update(ctx, made['id'], {'end_date': at(10)})  # 27
    assert shown(ctx)['charged_hours'] == 6
    assert check.disagreements(ctx) == []


def test_the_scheduled_end_refunds_nothing(days, ctx):
    lease(ctx, 2, 'now', at(2))
    days.clock.advance(3 * 3600)
    assert LEASES.end_due(ctx) == 1
    assert shown(ctx)['charged_hours'] == 4
    assert [kind for kind, _h, _l in kinds(ctx)] == ['lease_charge',
                                                    'refill']


def test_a_lease_accepted_before_its_budget_is_neither_charged_nor_refunded(
        pool, ctx):  # noqa: F811 (the fixture imported above)
    CONF.set_override('period', 'P1D', 'budgets')
    try:
        made = lease(ctx, 2, at(1), at(5))
        books.set_budget(ctx, 'p1', 'FPGA', 20)
        LEASES.delete(ctx, made['id'])
        assert shown(ctx)['remaining_hours'] == 20
        assert kinds(ctx) == [('refill', 20, False)]
    finally:
        CONF.clear_override('period', 'budgets')
