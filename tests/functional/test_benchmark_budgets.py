"""The budgets benchmark, run tiny (``--quick``) on every backend: it
measures the hot paths with and without a budget and a roll-over, checks
the books, and reports each target; its roll-over's books agree before
it runs. Speed is the benchmark's to measure, never asserted here."""

import argparse
import io

import pytest

import benchmarks
from benchmarks import budget_books
from benchmarks import budgets
from benchmarks import report
from cyquota.budgets import check
from cyquota.budgets import rollover
from cyquota import context as cyquota_context
from cyquota.db import budget_models
from cyquota.db import models


@pytest.fixture(autouse=True)
def _configured(monkeypatch):
    # The suite has parsed cyquota's configuration already.
    monkeypatch.setattr(benchmarks, '_configured', True)


def _run(backend, tmp_path):
    rows = budgets.run(argparse.Namespace(quick=True, backends=[backend]),
                       report.Progress(io.StringIO()))
    assert [row['check'] for row in rows] == ['ok'] * len(rows)
    assert [row['case'] for row in rows] == [
        budgets.RESERVE, budgets.TREE_RESERVE, budgets.LEASE,
        budget_books.case(budget_books.QUICK_PROJECTS)]
    reserves, trees, creates, rolled = rows
    # No budget: the statements of the code before budgets; a budget
    # adds none to a reserve or commit (a tree's neither), some to a
    # lease's create.
    before = budgets.STATEMENTS_BEFORE_BUDGETS[backend]
    assert reserves['statements_without'] == before[budgets.RESERVE]
    assert reserves['statements_with'] == reserves['statements_without']
    assert trees['statements_with'] == trees['statements_without']
    assert creates['statements_without'] == before[budgets.LEASE]
    assert int(creates['statements_with']) > int(before[budgets.LEASE])
    assert rolled['fixed']
    assert rolled['projects'] == budget_books.QUICK_PROJECTS
    assert rolled['budgets'] > rolled['projects']
    lines = budgets.summary(rows)
    assert sum(line.startswith('target: ') for line in lines) == 3
    assert sum(line.startswith('  %s: ' % backend) for line in lines) == 7
    report.write_figure(str(tmp_path / 'budgets.png'), budgets.TITLE,
                        lambda ax: budgets.plot(rows, ax))
    assert (tmp_path / 'budgets.png').stat().st_size


def test_budgets_sqlite(tmp_path):
    _run('sqlite', tmp_path)


def test_budgets(backend, tmp_path):
    _run(backend, tmp_path)


def test_the_bulk_books_agree_and_are_due_sqlite():
    """The books the roll-over is measured on, as ``books.set_budget``
    leaves them: ``budget check`` agrees, every project is due, and one
    roll-over moves each once."""
    with benchmarks.throwaway_database('sqlite') as url:
        assert url is not None
        ctx = cyquota_context.get_admin_context()
        usages, budget_rows, entries = budget_books.plan(40, models.utcnow())
        budget_books.write(models.QuotaUsage.__table__, usages)
        budget_books.write(budget_models.Budget.__table__, budget_rows)
        budget_books.write(budget_models.BudgetEntry.__table__, entries)
        assert check.disagreements(ctx) == []
        assert len(rollover.due_projects(ctx, models.utcnow())) == 40
        assert {row['refill'] for row in budget_rows} == set(
            budget_models.REFILLS)
        assert rollover.roll_all(ctx) == 40
        assert budget_books.rolled(ctx, budget_rows, entries) == []
