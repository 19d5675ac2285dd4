"""Model-based test of the quota ledger on SQLite, along each path
(``tests.ledger_paths``): its fastest (batches, upserts, ``RETURNING``),
step by step and locked (``tests.ledger_machine`` tells the machine;
PostgreSQL and MariaDB: tests/functional/test_ledger_model_backends.py)."""

import pytest

from tests import ledger_machine
from tests import ledger_paths


@pytest.mark.parametrize('path', ledger_paths.PATHS)
def test_ledger_against_model(sqlite_db, monkeypatch, path):
    ledger_paths.force(monkeypatch, path)
    ledger_machine.run(monkeypatch, examples=20, steps=50)
