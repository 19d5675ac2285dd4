"""Model-based test of accelerator-hour budgets on PostgreSQL and MariaDB
(``tests.budget_machine``)."""

import pytest

from tests import budget_machine

pytestmark = pytest.mark.functional


def test_budgets_against_model(backend, monkeypatch):
    budget_machine.run(monkeypatch, examples=30, steps=50)


def test_tree_budgets_against_model(backend, monkeypatch):
    budget_machine.run(monkeypatch, examples=15, steps=50, tree=True)
