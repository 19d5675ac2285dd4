"""Budgets under strict-two-level, on SQLite with a clock the tests move
(SPEC 3.8: a parent's budget covers its whole tree, a child's own budget
is within its parent's): a root's budget is kept on its tree's row and
spent by every member's attaches and leases; a child's own budget is
spent by the child alone, and both refuse; the books prove themselves."""

import datetime

import pytest

from cyquota.budgets import books
from cyquota.budgets import check
from cyquota.budgets import document
from cyquota.budgets import entries
from cyquota.budgets import exhaustion
from cyquota.budgets import rollover
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import budget_models
from cyquota.db import models
from cyquota import exception
from cyquota import leases
from cyquota.quota import QUOTAS
from tests.unit import strict_two_level
from tests.unit.test_engine import START, clock  # noqa: F401,H301
from tests.unit.test_leases import at, lease, pool  # noqa: F401,H301

HOUR = datetime.timedelta(hours=1)
TREES = models.TreeUsage.__table__


@pytest.fixture
def tree(pool, ctx):  # noqa: F811 (the fixture imported above)
    """Daily periods; root over children a and b (strict-two-level);
    a budget of 10 FPGA-hours a day for the root, which covers the
    tree."""
    CONF.set_override('period', 'P1D', 'budgets')
    with strict_two_level.root_over_a_and_b(pool, ctx):
        set_budget(ctx, 'root', 10)
        yield pool
    CONF.clear_override('period', 'budgets')


def set_budget(ctx, project_id, hours):
    books.set_budget(ctx, project_id, 'FPGA', hours,
                     model=QUOTAS.limits.model)


def attach(ctx, project_id, delta=1):
    QUOTAS.commit(ctx, project_id,
                  QUOTAS.reserve(ctx, project_id, {'FPGA': delta}))


def remaining(ctx, project_id):
    return document.show(ctx, project_id)['resources']['FPGA'][
        'remaining_hours']


def tree_usage(ctx, project_id):
    return QUOTAS.get_project_usage(ctx, project_id)['FPGA']['tree']


def test_a_roots_budget_is_kept_on_its_trees_row(tree, ctx):
    with db_api.get_engine().connect() as conn:
        [(scope,)] = conn.execute(
            budget_models.Budget.__table__.select()
            .with_only_columns(budget_models.Budget.scope)).all()
        [(base,)] = conn.execute(
            TREES.select().with_only_columns(TREES.c.budget_base)).all()
    assert (scope, base) == ('tree', 10 * 3600)
    assert 'remaining_hours' not in QUOTAS.get_project_usage(
        ctx, 'root')['FPGA']
    assert check.disagreements(ctx) == []


def test_every_member_spends_the_roots_budget(tree, ctx):
    attach(ctx, 'a', 2)
    attach(ctx, 'root')
    tree.clock.advance(2 * 3600)
    attach(ctx, 'b')
    tree.clock.advance(3600)
    # 3 FPGAs for two hours, then 4 for one: 10 hours spent.
    assert remaining(ctx, 'root') == 0
    for member in ('root', 'a', 'b'):
        assert tree_usage(ctx, member)['remaining_hours'] == 0
    assert document.show(ctx, 'root')['resources']['FPGA'][
        'spent_hours'] == 10
    assert check.disagreements(ctx) == []


def test_a_spent_tree_refuses_every_member(tree, ctx):
    attach(ctx, 'a', 2)
    tree.clock.advance(5 * 3600)
    for member in ('a', 'b', 'root'):
        with pytest.raises(exception.BudgetExhausted) as refused:
            QUOTAS.reserve(ctx, member, {'FPGA': 1})
        assert (refused.value.kwargs['project_id'],
                refused.value.kwargs['balance_hours']) == ('root', 0)
    attach(ctx, 'a', -1)  # A detach is never refused.
    assert tree_usage(ctx, 'a')['used'] == 1


def test_a_childs_own_budget_is_within_its_roots(tree, ctx):
    set_budget(ctx, 'a', 1)
    attach(ctx, 'a')
    tree.clock.advance(3600)
    with pytest.raises(exception.BudgetExhausted) as refused:
        QUOTAS.reserve(ctx, 'a', {'FPGA': 1})
    assert refused.value.kwargs['project_id'] == 'a'
    attach(ctx, 'b')  # The tree has 9 hours left.
    assert (remaining(ctx, 'a'), remaining(ctx, 'root')) == (0, 9)
    usage = QUOTAS.get_project_usage(ctx, 'a')['FPGA']
    assert (usage['remaining_hours'], usage['tree']['remaining_hours']) == (
        0, 9)
    assert check.disagreements(ctx) == []


def test_a_lease_charges_its_project_and_its_tree(tree, ctx):
    set_budget(ctx, 'a', 5)
    made = lease(ctx, 2, at(1), at(3), project='a')
    assert (remaining(ctx, 'a'), remaining(ctx, 'root')) == (1, 6)
    charges = {(e['kind'], e['hours'], e['lease_id'])
               for project in ('a', 'root')
               for e in entries.page(ctx, project, 10)
               if e['lease_id']}
    assert charges == {('lease_charge', -4, made['id'])}
    # The tree's balance refuses a lease the child's would take.
    with pytest.raises(exception.BudgetExhausted) as refused:
        lease(ctx, 2, at(1), at(5), project='b')  # 8 of 6 hours
    assert refused.value.kwargs['project_id'] == 'root'
    # Ended before it starts: both are refunded.
    leases.LEASES.delete(ctx, made['id'])
    assert (remaining(ctx, 'a'), remaining(ctx, 'root')) == (5, 10)
    assert check.disagreements(ctx) == []


def test_the_roll_over_refills_the_tree(tree, ctx):
    attach(ctx, 'a', 2)
    tree.clock.advance(12 * HOUR.total_seconds())  # Midnight: a new day.
    assert rollover.roll_all(ctx) == 1
    assert rollover.roll_all(ctx) == 0
    kinds = [(e['kind'], e['hours']) for e in entries.page(ctx, 'root', 10)]
    assert kinds[:2] == [('refill', 24), ('accrual', -24)]
    assert remaining(ctx, 'root') == 10
    assert check.disagreements(ctx) == []


def test_a_spent_tree_is_told_once(tree, ctx):
    attach(ctx, 'b', 1)
    tree.clock.advance(10 * 3600)
    assert exhaustion.tell(ctx) == 1
    assert exhaustion.tell(ctx) == 0


def test_check_finds_a_trees_balance_without_a_budget(tree, ctx):
    books.delete_budget(ctx, 'root', 'FPGA')
    assert check.disagreements(ctx) == []
    with db_api.get_engine().begin() as conn:
        conn.execute(TREES.update().values(budget_base=7))
    assert check.disagreements(ctx) == [check.Disagreement(
        'root', 'FPGA', 'budget_base', None, 7)]
