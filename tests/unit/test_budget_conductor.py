"""The conductor's periodic roll-over: a conductor started after a
period's boundary refills the budgets once, and one restarted after it
refills nothing more."""

import datetime

from cyquota.budgets import books
from cyquota.budgets import check
from tests.unit import test_budget_books as shared
from tests.unit.test_budget_books import START, budget, kinds
from tests.unit.test_conductor_service import run_conductor_until

clock = shared.clock
books_db = shared.books_db


def test_a_restart_across_a_boundary_refills_once(books_db, ctx):
    books.set_budget(ctx, 'p1', 'GPU', 10, 'carry')
    books_db.move(datetime.timedelta(days=7, hours=1))
    run_conductor_until(
        lambda: budget(ctx)['period_start'] != START)
    # Restarted: its first run finds nothing more to roll.
    run_conductor_until(lambda: False, timeout=1.5)
    assert kinds(ctx) == [('refill', 10), ('accrual', 0), ('refill', 10)]
    assert budget(ctx)['remaining_hours'] == 20
    assert check.disagreements(ctx) == []
