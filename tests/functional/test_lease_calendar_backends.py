"""The calendar's reads on PostgreSQL and MariaDB: the tests of
tests/unit/test_lease_calendar.py on each server (the peaks the database
computes, the windows a check reads, statements that do not grow with a
lease's reservations, ``promised`` kept exact by lease events)."""

from tests.unit.test_engine import clock  # noqa: F401,H301
from tests.unit import test_lease_calendar
from tests.unit.test_lease_calendar import device, devices  # noqa: F401,H301


def test_peaks_equal_the_sweep(backend, clock, device):  # noqa: F811
    test_lease_calendar.check_peaks_equal_the_sweep(device)


def test_a_longer_window_than_the_last_read_found(backend, device):  # noqa
    test_lease_calendar.check_a_longer_window_than_the_last_read_found(
        device)


def test_statements_flat(backend, clock, ctx, devices):  # noqa: F811
    test_lease_calendar.check_statements_do_not_grow_with_reservations(
        ctx, clock)


def test_promised_stays_exact(backend, clock, ctx):  # noqa: F811
    test_lease_calendar.check_promised_stays_exact(ctx, clock)


def test_far_windows(backend, clock, ctx, devices):  # noqa: F811
    test_lease_calendar.check_windows_to_the_end_of_time(ctx)
