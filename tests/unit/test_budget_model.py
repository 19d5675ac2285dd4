"""Model-based test of accelerator-hour budgets on SQLite
(``tests.budget_machine``; PostgreSQL and MariaDB:
tests/functional/test_budget_model_backends.py)."""

from tests import budget_machine


def test_budgets_against_model(sqlite_db, monkeypatch):
    budget_machine.run(monkeypatch, examples=100, steps=50)


def test_tree_budgets_against_model(sqlite_db, monkeypatch):
    budget_machine.run(monkeypatch, examples=50, steps=50, tree=True)
