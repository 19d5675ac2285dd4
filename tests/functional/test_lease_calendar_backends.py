"""The calendar's reads on PostgreSQL and MariaDB: the tests of
tests/unit/test_lease_calendar.py on each server (the peaks the database
computes, the windows a check reads, statements that do not grow with a
lease's reservations, ``promised`` kept exact by lease events, dates read
exactly, limits read with the usage rows' lock)."""

import pytest

from cyquota.db import api as db_api
from cyquota.placement import member_of
from cyquota.placement import pools
from cyquota.placement import windows
from tests import fixtures
from tests.unit.test_engine import START, clock  # noqa: F401,H301
from tests.unit import test_lease_calendar
from tests.unit.test_lease_calendar import device, devices  # noqa: F401,H301


def test_peaks_equal_the_sweep(backend, clock, device):  # noqa: F811
    test_lease_calendar.check_peaks_equal_the_sweep(device)


def test_a_longer_window_than_the_last_read_found(backend, device):  # noqa
    test_lease_calendar.check_a_longer_window_than_the_last_read_found(
        device)


def test_dates_read_exactly(backend):
    test_lease_calendar.check_dates_read_exactly()


def test_limits_read_with_the_lock(backend, clock, ctx,  # noqa: F811
                                   devices):  # noqa: F811
    test_lease_calendar.check_limits_read_with_the_lock(ctx)


def test_statements_flat(backend, clock, ctx, devices):  # noqa: F811
    test_lease_calendar.check_statements_do_not_grow_with_reservations(
        ctx, clock)


@pytest.mark.parametrize('backend', ['mysql'], indirect=True)
def test_when_mariadb_prepares_no_more(backend, clock, ctx,  # noqa: F811
                                       devices, caplog):  # noqa: F811
    """Every lease operation, with 1 and 16 reservations, runs unprepared
    where MariaDB holds ``max_prepared_stmt_count`` statements already,
    and the books stay right."""
    with fixtures.mariadb_prepares_no_more():
        test_lease_calendar.check_statements_do_not_grow_with_reservations(
            ctx, clock)
        test_lease_calendar.check_promised_stays_exact(ctx, clock)
    assert 'refused to prepare one more statement' in caplog.text


def test_promised_stays_exact(backend, clock, ctx):  # noqa: F811
    test_lease_calendar.check_promised_stays_exact(ctx, clock)


def test_far_windows(backend, clock, ctx, devices):  # noqa: F811
    test_lease_calendar.check_windows_to_the_end_of_time(ctx)


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_every_connection_keeps_one_plan(backend, devices):  # noqa: F811
    """The calendar's prepared reads run on connections in transactions:
    PostgreSQL keeps one plan for them there too (left to choose, it
    planned them anew at every run in a large calendar), and the setting
    outlives a transaction rolled back."""
    for engine in (db_api.get_engine(), db_api.get_autocommit_engine()):
        with engine.connect() as conn:
            conn.rollback()
            assert conn.exec_driver_sql(
                'SHOW plan_cache_mode').scalar() == 'force_generic_plan'
    start = START + test_lease_calendar.HOUR
    with db_api.get_engine().connect() as conn:
        for _ in range(6):  # Past the five runs PostgreSQL plans afresh.
            windows.choose(conn, [windows.DeviceNeed(
                'r1', 'FPGA', 1, member_of.MemberOf())], start,
                start + test_lease_calendar.HOUR, pools.Carrier('p1'))
        kept = conn.exec_driver_sql(
            'SELECT count(*), sum(custom_plans) FROM pg_prepared_statements'
        ).one()
    assert kept == (2, 0)  # The page and the device windows.
