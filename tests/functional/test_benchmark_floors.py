"""The floors benchmark, run tiny (``--quick``) on each server: it catches
the ledger's one statements, replays them on a driver connection as the
ledger runs them, and checks the books. Speed is the benchmark's to
measure, never asserted here."""

import argparse
import io

import pytest

import benchmarks
from benchmarks import floors
from benchmarks import report

pytestmark = pytest.mark.functional


@pytest.fixture(autouse=True)
def _configured(monkeypatch):
    # The suite has parsed cyquota's configuration already.
    monkeypatch.setattr(benchmarks, '_configured', True)


def test_floors(backend):
    rows = floors.run(argparse.Namespace(quick=True, backends=[backend]),
                      report.Progress(io.StringIO()))
    assert [(row['operation'], row['check']) for row in rows] == [
        ('reserve', 'ok'), ('commit', 'ok')]
