"""``cyquota-manage budget check`` and ``rollover`` as an operator runs
them, with a config file (``main`` in the test's process, as in
``test_manage``)."""

import sqlalchemy as sa

from cyquota.budgets import books
from cyquota.db import api as db_api
from cyquota.db import models
from tests import fixtures
from tests.unit.test_manage import _rows, manage  # noqa: F401

USAGES = models.QuotaUsage.__table__


def test_check_is_clean_then_finds_a_broken_book(manage, ctx):  # noqa: F811
    assert manage('db', 'sync').returncode == 0
    fixtures.use_database(manage.url, migrate=False)
    books.set_budget(ctx, 'proj-a', 'GPU', 10)

    clean = manage('budget', 'check')
    assert (clean.returncode, clean.stdout) == (
        0, 'All budgets agree with their entries.\n'), clean.stderr

    with db_api.get_engine().begin() as conn:
        conn.execute(USAGES.update().values(
            budget_base=USAGES.c.budget_base - 60))
        conn.execute(USAGES.insert().values(
            project_id='proj-b', resource='FPGA', used=0, reserved=0,
            budget_base=7, created_at=models.utcnow()))
    broken = manage('budget', 'check')
    assert broken.returncode == 1
    assert _rows(broken.stdout) == [
        ['proj-a', 'GPU', 'budget_base', '35940', '36000'],
        ['proj-b', 'FPGA', 'budget_base', '7', '(none)']]


def test_rollover_by_hand_finds_nothing_in_the_same_period(
        manage, ctx):  # noqa: F811
    assert manage('db', 'sync').returncode == 0
    fixtures.use_database(manage.url, migrate=False)
    books.set_budget(ctx, 'proj-a', 'GPU', 10)
    done = manage('budget', 'rollover')
    assert (done.returncode, done.stdout) == (
        0, 'Rolled over the budgets of 0 project(s); 0 budget(s) found '
           'spent.\n'), done.stderr
    with db_api.get_engine().connect() as conn:
        assert conn.execute(sa.select(USAGES.c.budget_base)).scalar() == (
            36000)
