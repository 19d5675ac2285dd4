"""Model-based test of the quota ledger on PostgreSQL and MariaDB, along
each path: the one statements (CTE chains, compound blocks), step by
step, and locked; every run also claims devices and starts and ends
leases (``tests.ledger_machine``)."""

import pytest

from tests import ledger_machine
from tests import ledger_paths

pytestmark = pytest.mark.functional


@pytest.mark.parametrize('path', ledger_paths.PATHS)
def test_ledger_against_model(backend, monkeypatch, path):
    ledger_paths.force(monkeypatch, path)
    ledger_machine.run(monkeypatch, examples=8, steps=60)
