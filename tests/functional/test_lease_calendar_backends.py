"""The calendar's reads on PostgreSQL and MariaDB: the tests of
tests/unit/test_lease_calendar.py on each server (the peaks the database
computes, the windows a check reads, statements that do not grow with a
lease's reservations, ``promised`` kept exact by lease events, dates read
exactly, limits read with the usage rows' lock), and the indexes that
serve the windows' reads alone."""

import re
import uuid

import pytest
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import placement_models
from cyquota.db import prepared
from cyquota.lease_tables import calendar
from cyquota.leases import devices as lease_devices
from cyquota.lease_tables import overlaps
from cyquota.placement import device_pages
from cyquota.placement import member_of
from cyquota.placement import pools
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
    # A session of its own: the pooled one keeps what the fixtures ran.
    db_api.get_engine().dispose()
    with db_api.get_engine().connect() as conn:
        for _ in range(6):  # Past the five runs PostgreSQL plans afresh.
            lease_devices.choose(conn, [lease_devices.DeviceNeed(
                'r1', 'FPGA', 1, member_of.MemberOf())], start,
                start + test_lease_calendar.HOUR, pools.Carrier('p1'))
        kept = conn.exec_driver_sql(
            'SELECT count(*), sum(custom_plans) FROM pg_prepared_statements'
        ).one()
    assert kept == (2, 0)  # The page and the device windows.


#: The calendar's indexes that must hold everything its windows' reads
#: return.
_WINDOW_INDEXES = ('lease_reservations_project_window_idx',
                   'lease_reservations_root_window_idx',
                   'lease_allocations_rp_window_idx')


def _explained(conn, sent, params):
    """The server's plan of the statement ``sent`` (as sent: its text, or
    MariaDB's ``EXECUTE`` of a prepared one, its arguments named binds of
    ``params``), planned anew with those values."""
    if sent.startswith('EXECUTE'):
        name, arguments = re.match(r'EXECUTE (\w+)(.*)', sent, re.S).groups()
        binds = prepared.BIND.findall(arguments)
        pieces = prepared.text(name).split('?')
        sent = pieces[0] + ''.join('%%(%s)s' % bind + piece for bind, piece
                                   in zip(binds, pieces[1:]))
    return conn.exec_driver_sql('EXPLAIN ' + sent, params).all()


def test_windows_read_from_their_indexes_alone(backend, device):  # noqa
    """A project's, a tree root's and the devices' overlapping windows are
    read from the calendar's indexes alone, never from the tables' rows:
    where the calendar outgrows the server's memory, each row looked up
    in the table would be a page read at a random place."""
    PENDING, ACTIVE = lease_models.PENDING, lease_models.ACTIVE
    provider_id = test_lease_calendar._store(
        device, [(10, 2, 1, PENDING), (1, 20, 3, PENDING), (0, 3, 2, ACTIVE)])
    # Another project's calendar on another device: what makes the
    # calendar's indexes the ones a planner picks.
    device.provider('dev2', inventory={'FPGA': {'total': 64}})
    test_lease_calendar._store(
        device, [(n, 1, 1, PENDING) for n in range(300)], project='p2',
        root='r2', device='dev2', keep=True)
    begin = START + 20 * test_lease_calendar.HOUR
    end = begin + test_lease_calendar.HOUR
    postgresql = db_api.get_engine().dialect.name == 'postgresql'
    with db_api.get_autocommit_engine().connect() as conn:
        # Fresh statistics; PostgreSQL's index-only scans skip the pages
        # VACUUM marked.
        conn.exec_driver_sql(
            'VACUUM ANALYZE lease_reservations, lease_allocations'
            if postgresql else
            'ANALYZE TABLE lease_reservations, lease_allocations').close()
    sent = []

    def seen(conn, cursor, statement, parameters, context, many):
        sent.append((statement, parameters))
    with db_api.get_engine().connect() as conn:
        if postgresql:  # Else a table this small is read whole.
            conn.exec_driver_sql('SET LOCAL enable_seqscan = off')
            conn.exec_driver_sql('SET LOCAL enable_bitmapscan = off')
        reads = overlaps.Overlaps(conn)
        asked = [reads.levels(key, holder, {'FPGA'}, begin, end)
                 for key, holder in (('project_id', 'p1'), ('root_id', 'r1'))]
        asked.append(reads.devices({'FPGA'}, begin, end, {provider_id}))
        sa.event.listen(conn, 'before_cursor_execute', seen)
        found = [each.windows() for each in asked]
        sa.event.remove(conn, 'before_cursor_execute', seen)
        # Read twice, the second time from further back (the longest
        # pending window was not known): the same statement.
        statement, params = [each for each in sent if each[0].startswith(
            ('EXECUTE', 'SELECT', 'WITH'))][-1]
        plan = _explained(conn, statement, params)
    # The active window ended before: a device's usage counts it still.
    assert [sorted(w.amount for w in windows['FPGA'])
            for windows in found[:2]] == [[3], [3]]
    assert sorted(w.amount for _lease, w in found[2][provider_id, 'FPGA']) \
        == [2, 3]
    if postgresql:
        lines = [row[0] for row in plan]
        scans = [line for line in lines if ' on lease_' in line]
        for index in _WINDOW_INDEXES:  # A pending and an active read each.
            assert len([line for line in scans if 'Index Only Scan using %s '
                        % index in line]) == 2, lines
        # And the longest pending spans, from their own indexes.
        assert len(scans) == 8, lines
    else:
        reads = [row._mapping for row in plan
                 if row._mapping['key'] in _WINDOW_INDEXES]
        assert sorted(read['key'] for read in reads) == sorted(
            _WINDOW_INDEXES * 2)
        # Not "Using index condition": a filter on the index, then rows.
        assert all('Using index' in read['Extra'].split('; ')
                   for read in reads), plan


@pytest.mark.parametrize('backend', ['mysql'], indirect=True)
def test_a_page_of_devices_starts_from_the_inventories(backend):
    """The page of candidate devices is a range of the inventories'
    index, joined to its providers: MariaDB, left to choose, walked the
    providers in id order (here 500 compute nodes, made first, before
    5,000 devices) for the few of the page."""
    rp = placement_models.ResourceProvider.__table__
    with db_api.get_engine().begin() as conn:
        conn.execute(rp.insert(), [
            dict(uuid=str(uuid.uuid4()), name='cn%d' % n, generation=0)
            for n in range(500)])
        conn.execute(rp.update().values(root_provider_id=rp.c.id))
        first = conn.execute(sa.select(sa.func.min(rp.c.id))).scalar()
        conn.execute(rp.insert(), [
            dict(uuid=str(uuid.uuid4()), name='dev%04d' % n, generation=0,
                 parent_provider_id=first + n // 10,
                 root_provider_id=first + n // 10) for n in range(5000)])
        conn.execute(placement_models.Inventory.__table__.insert(), [
            dict(resource_provider_id=provider_id, resource_class='FPGA',
                 total=4, reserved=0, min_unit=1, max_unit=4, step_size=1,
                 allocation_ratio=1.0)
            for provider_id in conn.execute(sa.select(rp.c.id).where(
                rp.c.name.like('dev%'))).scalars()])
    with db_api.get_autocommit_engine().connect() as conn:
        conn.exec_driver_sql('ANALYZE TABLE resource_providers, '
                             'provider_inventories').close()
    sent = []

    def seen(conn, cursor, statement, parameters, context, many):
        sent.append((statement, parameters))
    with db_api.get_engine().connect() as conn:
        sa.event.listen(conn, 'before_cursor_execute', seen)
        page = next(device_pages.pages(conn, {'FPGA'}, 1))
        sa.event.remove(conn, 'before_cursor_execute', seen)
        [(execute, params)] = [each for each in sent
                               if each[0].startswith('EXECUTE')]
        plan = [row._mapping for row in _explained(conn, execute, params)]
    assert sorted(name for _uuid, name, _root in page.names.values()) == [
        'dev0000', 'dev0001', 'dev0002', 'dev0003']
    first = plan[0]
    assert (first['table'], first['key']) == (
        'provider_inventories', 'uniq_provider_inventories0rp0rc'), plan
