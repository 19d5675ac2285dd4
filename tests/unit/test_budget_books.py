"""The books of budgets on SQLite with a clock the tests move: set,
change, delete, credit, the document and the entries' pages, each
keeping the invariant that ``budget check`` proves."""

import datetime

from oslo_utils import timeutils
import pytest

from cyquota.budgets import books
from cyquota.budgets import check
from cyquota.budgets import document
from cyquota.budgets import entries
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import meter
from cyquota.quota import QUOTAS
from cyquota.db import models
from cyquota import exception
from tests import fixtures

#: A Monday at midnight, the start of a period of P7D and of PT1H.
START = datetime.datetime(2026, 11, 2)
HOUR = datetime.timedelta(hours=1)
USAGES = models.QuotaUsage.__table__


class Clock:
    """Time standing still at ``now`` until a test moves it."""

    def __init__(self, now):
        self.now = now

    def __call__(self, with_timezone=False):
        return self.now

    def move(self, delta):
        self.now += delta


@pytest.fixture
def clock(monkeypatch):
    CONF.set_override('period', 'P7D', 'budgets')
    clock = Clock(START)
    monkeypatch.setattr(timeutils, 'utcnow', clock)
    yield clock
    CONF.clear_override('period', 'budgets')


@pytest.fixture
def books_db(sqlite_db, clock):
    return clock


def hold(project_id, resource, used):
    """Hold ``used`` units of ``resource`` by attaches from now on, as the
    ledger writes a usage row (its meter moved first)."""
    now = timeutils.utcnow()
    with db_api.get_engine().begin() as conn:
        changed = conn.execute(
            USAGES.update()
            .where(USAGES.c.project_id == project_id,
                   USAGES.c.resource == resource)
            .ordered_values(*meter.advance(USAGES), ('used', used)),
            meter.binds(now)).rowcount
        if not changed:
            conn.execute(USAGES.insert().values(
                project_id=project_id, resource=resource, used=used,
                reserved=0, metered_at=meter.seconds(now),
                marked_period=meter.binds(now)['_period_s'], metered_mark=0,
                created_at=now))


def budget(ctx, project_id='p1', resource='GPU'):
    return document.show(ctx, project_id)['resources'][resource]


def remaining(ctx, project_id):
    """The remaining hours the usage document shows, by resource."""
    return {resource: counts['remaining_hours'] for resource, counts
            in QUOTAS.get_project_usage(ctx, project_id).items()
            if 'remaining_hours' in counts}


def kinds(ctx, project_id='p1'):
    return [(e['kind'], e['hours']) for e in reversed(
        entries.page(ctx, project_id, 100))]


def test_a_project_without_a_budget_has_none(books_db, ctx):
    assert document.show(ctx, 'p1') == {'project_id': 'p1', 'resources': {}}
    assert remaining(ctx, 'p1') == {}
    assert check.disagreements(ctx) == []


def test_a_new_budget_is_full_and_attaches_spend_it(books_db, ctx):
    hold('p1', 'GPU', 2)
    books_db.move(HOUR)  # not budgeted yet: never spent
    books.set_budget(ctx, 'p1', 'GPU', 10)
    assert budget(ctx) == {
        'hours': 10, 'refill': 'reset', 'cap': None,
        'period_start': START, 'period_end': START + 7 * 24 * HOUR,
        'spent_hours': 0, 'charged_hours': 0, 'credited_hours': 0,
        'remaining_hours': 10, 'next_refill': START + 7 * 24 * HOUR}
    books_db.move(datetime.timedelta(minutes=90))
    assert budget(ctx)['spent_hours'] == 3
    assert budget(ctx)['remaining_hours'] == 7
    books_db.move(datetime.timedelta(seconds=1))
    assert budget(ctx)['remaining_hours'] == round(7 - 2 / 3600, 6)
    assert remaining(ctx, 'p1') == {
        'GPU': round(7 - 2 / 3600, 6)}
    assert check.disagreements(ctx) == []


def test_a_row_never_metered_starts_at_the_budget(books_db, ctx):
    with db_api.get_engine().begin() as conn:
        conn.execute(USAGES.insert().values(
            project_id='p1', resource='GPU', used=1, reserved=0,
            created_at=START))
    books_db.move(HOUR)
    books.set_budget(ctx, 'p1', 'GPU', 5)
    books_db.move(HOUR)
    assert budget(ctx)['remaining_hours'] == 4


def test_a_change_closes_the_accrual_and_moves_the_balance(books_db, ctx):
    books.set_budget(ctx, 'p1', 'GPU', 10)
    hold('p1', 'GPU', 1)
    books_db.move(2 * HOUR)
    books.set_budget(ctx, 'p1', 'GPU', 15, 'carry', 20)
    assert kinds(ctx) == [('refill', 10), ('accrual', -2), ('refill', 5)]
    shown = budget(ctx)
    assert (shown['hours'], shown['refill'], shown['cap']) == (
        15, 'carry', 20)
    assert (shown['spent_hours'], shown['remaining_hours']) == (2, 13)
    assert check.disagreements(ctx) == []


def test_a_credit_adds_to_the_balance_with_its_reason(books_db, ctx):
    ctx.user_id = 'admin-1'
    books.set_budget(ctx, 'p1', 'GPU', 1)
    written = books.credit(ctx, 'p1', 'GPU', 2.5, 'a conference demo')
    assert written == {
        'id': written['id'], 'kind': 'credit', 'hours': 2.5,
        'resource': 'GPU', 'period_start': START, 'at': START,
        'actor': 'admin-1', 'reason': 'a conference demo', 'lease_id': None}
    assert (budget(ctx)['credited_hours'],
            budget(ctx)['remaining_hours']) == (2.5, 3.5)
    assert check.disagreements(ctx) == []


def test_a_deleted_budget_closes_and_a_new_one_starts_afresh(books_db, ctx):
    books.set_budget(ctx, 'p1', 'GPU', 10)
    hold('p1', 'GPU', 1)
    books_db.move(HOUR)
    books.delete_budget(ctx, 'p1', 'GPU')
    assert document.show(ctx, 'p1')['resources'] == {}
    assert kinds(ctx) == [('refill', 10), ('accrual', -1), ('refill', -9)]
    books_db.move(HOUR)
    books.set_budget(ctx, 'p1', 'GPU', 4)
    books_db.move(HOUR)
    assert budget(ctx)['remaining_hours'] == 3
    assert check.disagreements(ctx) == []


@pytest.mark.parametrize('call', [
    lambda ctx: books.delete_budget(ctx, 'p1', 'GPU'),
    lambda ctx: books.credit(ctx, 'p1', 'GPU', 1, 'why'),
])
def test_no_budget_is_not_found(books_db, ctx, call):
    with pytest.raises(exception.BudgetNotFound) as caught:
        call(ctx)
    assert caught.value.message == 'Project p1 has no budget of GPU.'


@pytest.mark.parametrize('values, field', [
    (dict(hours=-1), 'hours'),
    (dict(hours='10'), 'hours'),
    (dict(hours=True), 'hours'),
    (dict(hours=1.0000001), 'hours'),
    (dict(hours=float('nan')), 'hours'),
    (dict(hours=1e10), 'hours'),
    (dict(hours=1, refill='decay'), 'refill'),
    (dict(hours=1, cap=2), 'cap'),
    (dict(hours=3, refill='carry', cap=2), 'cap'),
])
def test_a_bad_budget_is_refused_naming_its_field(books_db, ctx, values,
                                                  field):
    with pytest.raises(exception.InvalidBudget) as caught:
        books.set_budget(ctx, 'p1', 'GPU', **values)
    assert caught.value.message.startswith("Invalid budget: '%s'" % field)
    assert document.show(ctx, 'p1')['resources'] == {}


@pytest.mark.parametrize('hours, reason, field', [
    (0, 'why', 'hours'), (-1, 'why', 'hours'), (1, '', 'reason'),
    (1, 'x' * 256, 'reason'), (1, None, 'reason')])
def test_a_bad_credit_is_refused_naming_its_field(books_db, ctx, hours,
                                                  reason, field):
    books.set_budget(ctx, 'p1', 'GPU', 1)
    with pytest.raises(exception.InvalidBudget) as caught:
        books.credit(ctx, 'p1', 'GPU', hours, reason)
    assert "'%s'" % field in caught.value.message
    assert budget(ctx)['remaining_hours'] == 1


def test_hours_are_kept_to_the_second(books_db, ctx):
    books.set_budget(ctx, 'p1', 'GPU', 0.000139)  # 0.5004 s: 1 s kept
    assert budget(ctx)['hours'] == round(1 / 3600, 6)


def test_entries_come_newest_first_a_page_at_a_time(books_db, ctx):
    books.set_budget(ctx, 'p1', 'GPU', 1)
    books.set_budget(ctx, 'p2', 'GPU', 1)
    for hours in (1, 2, 3):
        books.credit(ctx, 'p1', 'GPU', hours, 'credit %d' % hours)
    first = entries.page(ctx, 'p1', 2)
    assert [e['hours'] for e in first] == [3, 2]
    rest = entries.page(ctx, 'p1', 2, marker=str(first[-1]['id']))
    assert [(e['kind'], e['hours']) for e in rest] == [('credit', 1),
                                                       ('refill', 1)]
    for marker in ('abc', '999', str(entries.page(ctx, 'p2', 1)[0]['id']),
                   '1' * 30):
        with pytest.raises(exception.InvalidQuery):
            entries.page(ctx, 'p1', 2, marker=marker)


def test_check_finds_books_that_disagree(books_db, ctx):
    books.set_budget(ctx, 'p1', 'GPU', 1)
    books.set_budget(ctx, 'p2', 'FPGA', 1)
    with db_api.get_engine().begin() as conn:
        conn.execute(USAGES.update().where(USAGES.c.project_id == 'p1')
                     .values(budget_base=USAGES.c.budget_base + 7))
        conn.execute(USAGES.update().where(USAGES.c.project_id == 'p2')
                     .values(budget_base=None))
        conn.execute(USAGES.insert().values(
            project_id='p3', resource='GPU', used=0, reserved=0,
            budget_base=5, created_at=START))
    assert check.disagreements(ctx) == [
        check.Disagreement('p1', 'GPU', 'budget_base', 3600, 3607),
        check.Disagreement('p2', 'FPGA', 'budget_base', 3600, None),
        check.Disagreement('p3', 'GPU', 'budget_base', None, 5)]


def test_set_sends_a_fixed_number_of_statements(books_db, ctx):
    books.set_budget(ctx, 'p1', 'FPGA', 1)
    with fixtures.statements_sent() as sent:
        books.set_budget(ctx, 'p1', 'GPU', 1)
    first = len(sent)
    with fixtures.statements_sent() as sent:
        books.set_budget(ctx, 'p1', 'GPU', 2)
    # BEGIN, the locks of the tree's rows, of the usage rows (the new one
    # inserted) and of the budgets, the sum of booked entries, the budget,
    # its entry, the usage row; a change: BEGIN, the locks, its entry (no
    # accrual to close), the budget, the usage row.
    assert (first, len(sent)) == (9, 7), sent
