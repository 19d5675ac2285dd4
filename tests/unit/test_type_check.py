"""The type check of mypy.ini (cyquota/quota and cyquota/leases) as a
test, so that ``make test``, all the CI runs, holds the code to it; ``tox
-e mypy`` runs the same check alone."""

import pathlib

from mypy import api

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_quota_and_leases_type_check(monkeypatch):
    # mypy.ini names its files relative to the repository's root; its
    # cache, .mypy_cache there, makes a run after the first one quick.
    monkeypatch.chdir(ROOT)
    report, errors, status = api.run(
        ['--config-file', str(ROOT / 'mypy.ini')])
    assert status == 0, report + errors
