"""The lease calendar and device-claim benchmarks, run tiny (``--quick``)
on every backend: they fill and check their calendars, measure, and
report each target; and the books check of a calendar sees books that
are wrong. Speed is the benchmarks' to measure, never asserted here."""

import argparse
import io

import pytest

import benchmarks
from benchmarks import device_claims
from benchmarks import lease_calendar
from benchmarks import lease_fill
from benchmarks import leases as leases_benchmark
from benchmarks import report
from benchmarks import rest
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.db import placement_models


@pytest.fixture(autouse=True)
def _configured(monkeypatch):
    # The suite has parsed cyquota's configuration already.
    monkeypatch.setattr(benchmarks, '_configured', True)


def _quiet():
    return report.Progress(io.StringIO())


def _calendar(backend, tmp_path):
    rows = lease_calendar.run(
        argparse.Namespace(quick=True, backends=[backend]), _quiet())
    assert [row['check'] for row in rows] == ['ok'] * len(rows)
    assert {row['case'] for row in rows} == {
        lease_calendar.create_case(size) for size in (10, 100, 1000)} | {
        lease_calendar.create_case(100, 16)} | {
        lease_calendar.sweep_case(sweep, 20, size)
        for sweep in lease_calendar.SWEEPS for size in (10, 1000)}
    assert all(row['queries'] for row in rows)
    lines = leases_benchmark.summary(rows)
    assert sum(line.startswith('target: ') for line in lines) == 7
    assert all(line.endswith('met') for line in lines
               if line.startswith('  %s: ' % backend))
    report.write_figure(str(tmp_path / 'leases.png'), leases_benchmark.TITLE,
                        lambda ax: leases_benchmark.plot(rows, ax))
    assert (tmp_path / 'leases.png').stat().st_size


def test_calendar_sqlite(tmp_path):
    _calendar('sqlite', tmp_path)


def test_calendar(backend, tmp_path):
    _calendar(backend, tmp_path)


def test_device_claims_sqlite(tmp_path):
    rows = device_claims.run('sqlite', True, _quiet())
    assert sorted((row['devices'], row['request']) for row in rows) == sorted(
        (devices, call) for devices in device_claims.QUICK_DEVICES
        for call in device_claims.CALLS)
    assert [row['check'] for row in rows] == ['ok'] * len(rows)
    lines = rest.summary(rows)
    assert sum(line.startswith('target: ') for line in lines) == 3
    assert sum(line.endswith('met') for line in lines
               if line.startswith('  sqlite')) == 7
    report.write_figure(str(tmp_path / 'rest.png'), rest.TITLE,
                        lambda ax: rest.plot(rows, ax))
    assert (tmp_path / 'rest.png').stat().st_size


def _books_check_sees(backend):
    with benchmarks.throwaway_database(backend) as url:
        assert url is not None
        now = models.utcnow().replace(microsecond=0)
        planned = lease_fill.plan(300, now)
        lease_fill.fill(planned, now)
        statuses = {'ACTIVE': 3, 'PENDING': 297}
        assert lease_fill.check(statuses) == []
        usages = models.QuotaUsage.__table__
        consumers = models.ConsumerUsage.__table__
        allocations = placement_models.DeviceAllocation.__table__
        lease_allocations = placement_models.LeaseAllocation.__table__
        inventories = placement_models.Inventory.__table__
        pending = next(p for p in planned if p.status == 'PENDING')
        active = next(p for p in planned if p.status == 'ACTIVE')
        with db_api.get_engine().begin() as conn:
            conn.execute(usages.update().where(
                usages.c.project_id == pending.project_id).values(
                    promised=usages.c.promised + 1))
            conn.execute(consumers.update().where(
                consumers.c.consumer_id == active.id).values(used=2))
            conn.execute(allocations.delete().where(
                allocations.c.consumer_id == active.id))
            conn.execute(lease_allocations.delete().where(
                lease_allocations.c.lease_id == pending.id))
            conn.execute(inventories.update().values(total=0))
        found = '\n'.join(lease_fill.check(dict(statuses, PENDING=298)))
    for expected in ('quota check: 1 counts', 'leases {', 'promised',
                     '299 lease allocations', 'device allocations differ',
                     'beyond capacity'):
        assert expected in found


def test_books_check_sees_wrong_books_sqlite():
    _books_check_sees('sqlite')


def test_books_check_sees_wrong_books(backend):
    _books_check_sees(backend)


def test_a_small_calendar_is_spread():
    """The first leases of the largest calendar: an active one, and
    pending ones over the 90 days, devices and projects."""
    now = models.utcnow().replace(microsecond=0)
    planned = lease_fill.plan(1000, now)[:10]
    assert [p.status for p in planned].count('ACTIVE') == 1
    pending = [p for p in planned if p.status == 'PENDING']
    assert min(p.start for p in pending) >= now + lease_fill.LEAD
    assert max(p.end for p in planned) - min(p.start for p in pending) > (
        lease_fill.HORIZON / 2)
    assert len({p.device for p in planned}) > 5
    assert len({p.project_id for p in planned}) > 5
