"""The roll-over of budgets on SQLite with a clock the tests move: each
period closed and refilled once, by ``reset`` or ``carry``, the leases'
charges of a period taking effect with it, a conductor restarted across
a boundary refilling once, and a spent budget told once a period."""

import datetime

import pytest

from cyquota.budgets import books as budget_books
from cyquota.budgets import check
from cyquota.budgets import entries
from cyquota.budgets import exhaustion
from cyquota.budgets import rollover
from cyquota.db import api as db_api
from cyquota.db import budget_models
from cyquota import metrics
from cyquota import notifications
from tests import fixtures
from tests.unit import test_budget_books as shared
from tests.unit.test_budget_books import START, budget, hold, kinds

HOUR = datetime.timedelta(hours=1)
WEEK = 7 * 24 * HOUR
ENTRIES = budget_models.BudgetEntry.__table__
clock = shared.clock
books_db = shared.books_db


@pytest.fixture
def books(books_db):
    """The books on SQLite and the clock that moves them."""
    return books_db


def test_reset_tops_the_balance_up_to_hours(books, ctx):
    budget_books.set_budget(ctx, 'p1', 'GPU', 10)
    hold('p1', 'GPU', 2)
    books.move(WEEK - 3 * HOUR)  # 6 days 21 h of 2 GPUs: -320 h
    hold('p1', 'GPU', 0)
    books.move(3 * HOUR + datetime.timedelta(minutes=5))
    assert rollover.roll_all(ctx) == 1
    assert kinds(ctx) == [('refill', 10), ('accrual', -330), ('refill', 330)]
    shown = budget(ctx)
    assert (shown['period_start'], shown['remaining_hours'],
            shown['spent_hours']) == (START + WEEK, 10, 0)
    assert rollover.roll_all(ctx) == 0
    assert check.disagreements(ctx) == []


def test_the_meter_at_the_boundary_is_the_mark_of_the_first_write(
        books, ctx):
    budget_books.set_budget(ctx, 'p1', 'GPU', 10)
    hold('p1', 'GPU', 1)
    books.move(WEEK + HOUR)
    hold('p1', 'GPU', 3)  # the first write of the new period marks it
    books.move(HOUR)
    rollover.roll_all(ctx)
    assert kinds(ctx) == [('refill', 10), ('accrual', -168), ('refill', 168)]
    # The two hours of the new period: 1 GPU, then 3.
    assert budget(ctx)['remaining_hours'] == 6
    assert budget(ctx)['spent_hours'] == 4
    assert check.disagreements(ctx) == []


@pytest.mark.parametrize('spent, cap, refill', [
    (0, None, 10), (0, 25, 10), (0, 15, 5), (0, 10, 0), (4, 12, 6),
    (30, None, 10), (30, 12, 10)])
def test_carry_adds_hours_up_to_the_cap(books, ctx, spent, cap, refill):
    budget_books.set_budget(ctx, 'p1', 'GPU', 10, 'carry', cap)
    hold('p1', 'GPU', 1)
    books.move(spent * HOUR)
    hold('p1', 'GPU', 0)
    books.move(WEEK)
    rollover.roll_all(ctx)
    assert kinds(ctx)[-1] == ('refill', refill)
    assert budget(ctx)['remaining_hours'] == 10 - spent + refill
    assert check.disagreements(ctx) == []


def test_charges_booked_for_a_period_count_from_its_start(books, ctx):
    budget_books.set_budget(ctx, 'p1', 'GPU', 10)
    # A lease's charge of the next period, as the ledger books it.
    with db_api.get_engine().begin() as conn:
        conn.execute(ENTRIES.insert().values(
            project_id='p1', resource='GPU', kind='lease_charge',
            seconds=-4 * 3600, period_start=START + WEEK, at=START,
            lease_id='l1'))
    assert check.disagreements(ctx) == []
    books.move(WEEK)
    rollover.roll_all(ctx)
    shown = budget(ctx)
    assert (shown['remaining_hours'], shown['charged_hours']) == (6, 4)
    assert check.disagreements(ctx) == []


def test_a_conductor_down_across_periods_refills_once(books, ctx):
    budget_books.set_budget(ctx, 'p1', 'GPU', 10, 'carry')
    books.move(3 * WEEK + HOUR)
    assert rollover.roll_all(ctx) == 1
    # Restarted, it runs at once again: nothing more to roll.
    assert rollover.roll_all(ctx) == 0
    assert kinds(ctx) == [('refill', 10), ('accrual', 0), ('refill', 10)]
    shown = budget(ctx)
    assert (shown['period_start'], shown['remaining_hours']) == (
        START + 3 * WEEK, 20)
    assert check.disagreements(ctx) == []


def test_a_write_rolls_the_books_before_it_counts(books, ctx):
    budget_books.set_budget(ctx, 'p1', 'GPU', 10)
    books.move(WEEK)
    budget_books.credit(ctx, 'p1', 'GPU', 1, 'before the conductor ran')
    assert rollover.roll_all(ctx) == 0
    assert budget(ctx)['remaining_hours'] == 11
    assert check.disagreements(ctx) == []


def test_a_lost_compare_and_set_changes_nothing(books, ctx):
    budget_books.set_budget(ctx, 'p1', 'GPU', 10)
    books.move(WEEK)
    with db_api.writer_connection(ctx) as conn:
        locked = rollover.rows.lock(conn, 'p1',
                                    rollover.meter.binds(books.now))
    assert rollover.roll_project(ctx, 'p1')
    with pytest.raises(rollover._Lost):
        with db_api.writer_connection(ctx) as conn:
            rollover.roll(conn, 'p1', books.now, locked)
    assert kinds(ctx) == [('refill', 10), ('accrual', 0), ('refill', 0)]
    assert check.disagreements(ctx) == []


def test_a_project_costs_a_fixed_number_of_statements(books, ctx):
    for project in ('p1', 'p2'):
        for resource in ('FPGA', 'GPU', 'CUSTOM_X')[:int(project[1]) + 1]:
            budget_books.set_budget(ctx, project, resource, 1)
    books.move(WEEK)
    counts = []
    for project in ('p1', 'p2'):
        with fixtures.statements_sent() as sent:
            assert rollover.roll_project(ctx, project)
        counts.append(len(sent))
    # BEGIN, the locks of the tree's rows, usage rows and budgets, the
    # pending entries' sums, the compare-and-set, the entries, the usage
    # rows.
    assert counts == [8, 8]


def test_a_spent_budget_is_told_once_a_period(books, ctx, monkeypatch):
    sent = []
    monkeypatch.setattr(notifications, 'enabled', lambda: True)
    monkeypatch.setattr(notifications, '_send',
                        lambda *args, **kwargs: sent.append(args))
    counted = metrics.BUDGET_EXHAUSTIONS.labels('GPU')._value.get()
    budget_books.set_budget(ctx, 'p1', 'GPU', 1)
    budget_books.set_budget(ctx, 'p2', 'GPU', 1)
    hold('p1', 'GPU', 1)
    books.move(HOUR - datetime.timedelta(seconds=1))
    assert exhaustion.tell(ctx) == 0
    books.move(datetime.timedelta(seconds=2))
    assert exhaustion.tell(ctx) == 1
    assert exhaustion.tell(ctx) == 0
    (_ctx, event, kind, data), = sent
    assert (event, kind) == ('accelerator.budget.exhausted',
                             notifications.BUDGET_EXHAUSTED)
    assert data == {'project_id': 'p1', 'resource': 'GPU',
                    'period_start': '2026-11-02T00:00:00Z',
                    'period_end': '2026-11-09T00:00:00Z',
                    'balance_hours': round(-1 / 3600, 6)}
    assert metrics.BUDGET_EXHAUSTIONS.labels('GPU')._value.get() == (
        counted + 1)
    hold('p1', 'GPU', 0)
    books.move(WEEK)
    rollover.roll_all(ctx)
    assert exhaustion.tell(ctx) == 0  # refilled
    hold('p1', 'GPU', 1)
    books.move(HOUR)
    assert exhaustion.tell(ctx) == 1  # spent again: a new period


def test_entries_of_a_roll_over_say_why(books, ctx):
    budget_books.set_budget(ctx, 'p1', 'GPU', 1)
    books.move(WEEK)
    rollover.roll_all(ctx)
    newest = entries.page(ctx, 'p1', 1)[0]
    assert (newest['kind'], newest['at'], newest['actor'],
            newest['reason']) == ('refill', START + WEEK, None,
                                  'period start')
    # A period closes with its accrual, zero or not.
    assert kinds(ctx) == [('refill', 1), ('accrual', 0), ('refill', 0)]
