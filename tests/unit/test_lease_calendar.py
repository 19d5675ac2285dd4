"""The calendar's reads on the embedded database (and, imported by
tests/functional/test_lease_calendar_backends.py, on PostgreSQL and
MariaDB): the peaks the database computes equal the sweep's over the same
windows, a check reads the windows that overlap its own and no other, and
a lease operation sends as many statements for 16 reservations as for 1.
"""

import datetime

import hypothesis
from hypothesis import strategies as st
import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.context import get_admin_context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import placement_models
from cyquota.db import prepared
from cyquota.db import types
from cyquota import exception
from cyquota import leases
from cyquota.lease_tables import calendar
from cyquota.leases import devices as lease_devices
from cyquota.lease_tables import overlaps
from cyquota.placement import device_errors
from cyquota.placement import device_pages
from cyquota.placement import member_of
from cyquota.placement import pools
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.unit.placement.conftest import Tree
from tests.unit.test_engine import START, clock  # noqa: F401,H301

HOUR = datetime.timedelta(hours=1)
_leases = lease_models.Lease.__table__
_reservations = lease_models.LeaseReservation.__table__
_allocations = placement_models.LeaseAllocation.__table__

#: A window: start and length in hours from START, amount, status; an
#: active lease has started (START is now).
calendar_rows = st.lists(st.tuples(
    st.integers(-6, 30), st.integers(1, 12), st.integers(1, 4),
    st.sampled_from(lease_models.STATUSES)).map(
        lambda w: (min(w[0], 0), *w[1:]) if w[3] == lease_models.ACTIVE
        else w), max_size=25)


def _store(tree, found, project='p1', root='r1', device='dev1',
           keep=False):
    """``found`` as lease reservations of ``project`` (tree ``root``) and
    lease allocations on ``device``, one lease each; the calendar's
    earlier rows deleted first, but where it ``keep``s them."""
    rp = placement_models.ResourceProvider.__table__
    with db_api.get_engine().begin() as conn:
        provider_id = conn.execute(sa.select(rp.c.id).where(
            rp.c.uuid == tree.rp[device])).scalar_one()
        if not keep:
            conn.execute(_allocations.delete())
            conn.execute(_reservations.delete())
            conn.execute(_leases.delete())
        windows = [dict(start_date=START + start * HOUR,
                        end_date=START + (start + hours) * HOUR,
                        status=status, lease_id='%s-lease-%d' % (project, n))
                   for n, (start, hours, _amount, status) in enumerate(found)]
        if not windows:
            return provider_id
        conn.execute(_leases.insert(), [
            dict(id=w['lease_id'], project_id=project, name=w['lease_id'],
                 start_date=w['start_date'], end_date=w['end_date'],
                 status=w['status']) for w in windows])
        conn.execute(_reservations.insert(), [
            dict(w, id='res-' + w['lease_id'], position=0,
                 project_id=project, root_id=root, resource='FPGA',
                 amount=amount, member_of='[]')
            for w, (*_found, amount, _status) in zip(windows, found)])
        conn.execute(_allocations.insert(), [
            dict(w, lease_reservation_id='res-' + w['lease_id'],
                 resource_provider_id=provider_id, resource_class='FPGA',
                 amount=amount)
            for w, (*_found, amount, _status) in zip(windows, found)])
    return provider_id


def _expected_windows(found, start, end):
    """The sweep's own view: live windows overlapping [start, end)."""
    result = []
    for s, hours, amount, status in found:
        if status not in lease_models.LIVE:
            continue
        window = (START + s * HOUR, calendar.held_until(
            START + (s + hours) * HOUR, status == lease_models.ACTIVE),
            amount)
        if window[0] < end and window[1] > start:
            result.append(window)
    return sorted(result)


def _overlapping(got, begin, end):
    """The windows read that overlap [begin, end): the others are active
    ones, read whatever their window."""
    assert all(w.start < end and (w.end > begin or not w.pending)
               for w in got)
    return sorted(w[:3] for w in got if w.end > begin)


@pytest.fixture
def device(ctx):
    tree = Tree(ctx)
    tree.provider('dev1', inventory={'FPGA': {'total': 64}})
    return tree


def check_peaks_equal_the_sweep(device):
    @hypothesis.settings(max_examples=40, deadline=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(found=calendar_rows, start=st.integers(0, 30),
                      hours=st.integers(1, 12))
    def run(found, start, hours):
        provider_id = _store(device, found)
        pending = [(START + s * HOUR, START + (s + n) * HOUR, amount)
                   for s, n, amount, status in found
                   if status == lease_models.PENDING]
        expected, at = calendar.peak_at(pending, START)
        with db_api.get_engine().connect() as conn:
            for key, holder in (('project_id', 'p1'), ('root_id', 'r1')):
                assert calendar.promised(conn, key, holder, {'FPGA'},
                                         START) == {'FPGA': (expected, at)}
            assert calendar.device_promised(conn, {provider_id}, START) == (
                {(provider_id, 'FPGA'): expected} if expected else {})
            begin, end = START + start * HOUR, START + (start + hours) * HOUR
            want = _expected_windows(found, begin, end)
            # Asked together (one query) and each alone, locked or not.
            reads = overlaps.Overlaps(conn)
            level = reads.levels('project_id', 'p1', {'FPGA'}, begin, end)
            held = reads.devices({'FPGA'}, begin, end, {provider_id})
            # A level reads the windows that overlap, no other.
            for got in (level.windows()['FPGA'], overlaps.Overlaps(
                    conn).levels('root_id', 'r1', {'FPGA'}, begin,
                                 end).windows()['FPGA']):
                assert sorted(w[:3] for w in got) == want
            for got in (
                    _on(held.windows(), provider_id),
                    _on(overlaps.Overlaps(conn).devices(
                        {'FPGA'}, begin, end, {provider_id}).windows(),
                        provider_id),
                    _on(overlaps.device_windows(
                        conn, {'FPGA'}, begin, end, {provider_id}),
                        provider_id)):
                assert _overlapping(got, begin, end) == want
                # Every active one too: its devices count in ``used``.
                assert sum(not w.pending for w in got) == sum(
                    status == lease_models.ACTIVE for *_w, status in found)
    run()


def _on(held, provider_id):
    return [w for _lease, w in held.get((provider_id, 'FPGA'), [])]


def test_peaks_equal_the_sweep(sqlite_db, clock, device):  # noqa: F811
    check_peaks_equal_the_sweep(device)


def check_a_longer_window_than_the_last_read_found(device):
    """A read's range starts as far back as the longest pending window the
    last read found, and the read says how long the longest is now: a
    longer one stored since is read all the same (a second query, from
    further back), and the next read is one query again; a level's
    windows and the devices' are read in the same query."""
    provider_id = _store(device, [(10, 2, 1, lease_models.PENDING)])
    begin, end = START + 20 * HOUR, START + 21 * HOUR

    def read():
        with db_api.get_engine().connect() as conn:
            def both():
                reads = overlaps.Overlaps(conn)
                level = reads.levels('project_id', 'p1', {'FPGA'}, begin,
                                        end)
                held = reads.devices({'FPGA'}, begin, end, {provider_id})
                return level.windows()['FPGA'], held.windows()
            with fixtures.statements_sent() as sent:
                found = both()
            # A connection's first run of a statement prepares it too;
            # SQLite's transactions begin with a statement of their own.
            return len([text for text in sent if not text.startswith(
                ('PREPARE', 'BEGIN'))]), found
    read()  # Learns the longest.
    once, found = read()
    assert once == 1
    assert found == ([], {})
    # Stored behind the calendar's back: no read saw it come.
    _store(device, [(10, 2, 1, lease_models.PENDING),
                    (1, 20, 3, lease_models.PENDING)])
    sent, (level, devices) = read()
    assert sent == 2
    assert [w.amount for w in level] == [3]
    assert [w.amount for _lease, w in devices[provider_id, 'FPGA']] == [3]
    assert read()[0] == once


@pytest.fixture
def devices(ctx):
    """Four devices of 8 FPGAs, a limit of 100 FPGAs a project."""
    return devices_of(ctx)


def devices_of(ctx):
    tree = Tree(ctx)
    for n in range(4):
        tree.provider('dev%d' % n, inventory={'FPGA': {'total': 8}})
    QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 100)
    leases.LEASES.reset()
    return tree


def _sent(function):
    with fixtures.statements_sent() as sent:
        result = function()
    return len(sent), result


def _body(count, start, end):
    return dict(start_date=start, end_date=end, reservations=[
        {'resource_type': 'accelerator:FPGA', 'amount': 1}] * count)


def _at(hours):
    return (START + hours * HOUR).isoformat() + '+00:00'


def check_statements_do_not_grow_with_reservations(ctx, clock):  # noqa
    # Once uncounted: the usage rows are made on a project's first lease,
    # and a server prepares a batch of writes of a new shape once.
    _statements_of_lease_operations(ctx, clock)
    counts = _statements_of_lease_operations(ctx, clock)
    for (case, action, count), sent in counts.items():
        if count == 16:
            assert sent == counts[case, action, 1], (
                case, action, sorted(counts.items()))


def _statements_of_lease_operations(ctx, clock):  # noqa: F811
    """``{(case, action, reservations): statements sent}``."""
    counts = {}
    for count in (1, 16):
        for case, start in (('pending', _at(1)), ('active', 'now')):
            sent, made = _sent(lambda: leases.LEASES.create(
                ctx, 'p1', _body(count, start, _at(3))))
            counts[case, 'create', count] = sent
            changes = {'end_date': _at(4)}
            counts[case, 'update', count], _ = _sent(
                lambda: leases.LEASES.update(ctx, made['id'], changes))
            counts[case, 'delete', count], _ = _sent(
                lambda: leases.LEASES.delete(ctx, made['id']))
        made = leases.LEASES.create(ctx, 'p1', _body(count, _at(1), _at(2)))
        clock.now = START + HOUR
        counts['sweep', 'start', count], started = _sent(
            lambda: leases.LEASES.start_due(ctx))
        assert started == 1
        clock.now = START + 2 * HOUR
        counts['sweep', 'end', count], ended = _sent(
            lambda: leases.LEASES.end_due(ctx))
        assert ended == 1
        clock.now = START
    return counts


#: A step: create a lease (its start and length in hours from the clock,
#: its amount), end the n-th live lease early, or move the clock (hours)
#: and run the conductor's sweeps.
steps = st.lists(st.one_of(
    st.tuples(st.just('create'), st.integers(1, 20), st.integers(1, 8),
              st.integers(1, 6)),
    st.tuples(st.just('delete'), st.integers(0, 9)),
    st.tuples(st.just('tick'), st.integers(1, 6))), min_size=1, max_size=14)


def _stored_promised():
    usages = QUOTAS.get_project_usage(cyquota_context(), 'p1')['FPGA']
    return usages['promised']


def check_promised_stays_exact(ctx, clock):  # noqa: F811
    """After every lease event the stored ``promised`` equals the peak
    the database counts from now on, though a start or an early end
    outside the peak's instant does not recount it."""
    @hypothesis.settings(max_examples=15, deadline=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(found=steps)
    def run(found):
        fixtures.clear_tables()
        devices_of(ctx)
        clock.now = START
        live = []
        for step in found:
            if step[0] == 'create':
                _kind, begin, hours, amount = step
                try:
                    live.append(leases.LEASES.create(ctx, 'p1', dict(
                        start_date=_clock_at(clock, begin),
                        end_date=_clock_at(clock, begin + hours),
                        reservations=[{'resource_type': 'accelerator:FPGA',
                                       'amount': amount}]))['id'])
                except (exception.OverQuota,
                        device_errors.NoValidAllocation):
                    pass
            elif step[0] == 'delete' and live:
                lease_id = live.pop(step[1] % len(live))
                if leases.LEASES.get(ctx, lease_id)['status'] != 'ENDED':
                    leases.LEASES.delete(ctx, lease_id)
            elif step[0] == 'tick':
                clock.now += step[1] * HOUR
                leases.LEASES.start_due(ctx)
                leases.LEASES.end_due(ctx)
            with db_api.get_engine().connect() as conn:
                exact, _at = calendar.promised(conn, 'project_id', 'p1',
                                               {'FPGA'}, clock.now)['FPGA']
            assert _stored_promised() == exact, (step, found)
    run()


def _clock_at(clock, hours):  # noqa: F811
    return (clock.now + hours * HOUR).isoformat() + '+00:00'


def test_promised_stays_exact(sqlite_db, clock, ctx):  # noqa: F811
    check_promised_stays_exact(ctx, clock)


def check_windows_to_the_end_of_time(ctx):
    """A lease to the year 9999 is stored (its span passes 32 bits) and
    leaves every later check's range open below: the next ones still see
    it."""
    def lease(project, amount, start, end):
        return leases.LEASES.create(ctx, project, dict(
            start_date=start, end_date=end, reservations=[
                {'resource_type': 'accelerator:FPGA', 'amount': amount}]))
    # The operator's to allow: [leases] max_duration is a year by default.
    CONF.set_override('max_duration', 10 ** 12, 'leases')
    try:
        far = lease('p1', 30, _at(1), '9999-12-31T00:00:00+00:00')
    finally:
        CONF.clear_override('max_duration', 'leases')
    assert far['status'] == 'PENDING'
    with pytest.raises(device_errors.NoValidAllocation):
        lease('p2', 3, _at(5000), _at(5001))
    assert lease('p2', 2, _at(5000), _at(5001))['status'] == 'PENDING'
    assert _stored_promised() == 30


def test_windows_to_the_end_of_time(sqlite_db, clock, ctx,  # noqa: F811
                                    devices):
    check_windows_to_the_end_of_time(ctx)


def check_limits_read_with_the_lock(ctx):
    """Under the flat model a lease create reads the project's limits in
    the query that locks its usage rows (no query of its own): its own
    limit where it has one, else the registered one, as they are when it
    runs."""
    def create(amount, first=False):
        with fixtures.statements_sent() as sent:
            try:
                leases.LEASES.create(ctx, 'p1', dict(
                    start_date=_at(1), end_date=_at(2), reservations=[{
                        'resource_type': 'accelerator:FPGA',
                        'amount': amount}]))
                made = True
            except exception.OverQuota:
                made = False
        apart = [text for text in sent
                 if text.startswith('SELECT registered_limits')]
        # The first makes the usage row, whose limit is read on its own.
        assert len(apart) == first, sent
        return made

    assert create(1, first=True)
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', 3)
    assert not create(3)
    assert create(2)
    QUOTAS.limits.delete_project_limit(ctx, 'p1', 'FPGA')
    QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 4)
    assert not create(2)
    assert create(1)


def test_limits_read_with_the_lock(sqlite_db, clock, ctx,  # noqa: F811
                                   devices):  # noqa: F811
    check_limits_read_with_the_lock(ctx)


def check_dates_read_exactly():
    """A window's dates as the calendar reads them (``types.read``, text
    on MariaDB) are the stored datetimes, to the microsecond, whether the
    read runs prepared or not."""
    usages = models.QuotaUsage.__table__
    stored = [START + datetime.timedelta(microseconds=1),
              START + datetime.timedelta(seconds=1)]
    with db_api.get_engine().begin() as conn:
        conn.execute(usages.insert(), [
            dict(project_id='p%d' % n, resource='FPGA', used=0, reserved=0,
                 promised_at=at) for n, at in enumerate(stored)])
    query = (sa.select(types.read(usages.c.promised_at).label('at'))
             .where(usages.c.used < sa.bindparam('above'))
             .order_by(usages.c.project_id))
    with db_api.get_engine().connect() as conn:
        for rows in (conn.execute(query, {'above': 1}),
                     prepared.execute(conn, query, {'above': 1})):
            assert [types.parsed(row.at) for row in rows] == stored


def test_dates_read_exactly(sqlite_db):
    check_dates_read_exactly()


def test_a_longer_window_than_the_last_read_found(sqlite_db, device):
    check_a_longer_window_than_the_last_read_found(device)


def test_statements_flat(sqlite_db, clock, ctx, devices):  # noqa: F811
    check_statements_do_not_grow_with_reservations(ctx, clock)


@pytest.fixture
def uneven(ctx):
    """Seven devices of uneven sizes, some of them split in small parts,
    two in an aggregate."""
    tree = Tree(ctx)
    for n, (total, max_unit) in enumerate(
            [(2, 2), (5, 2), (1, 1), (8, 8), (3, 1), (6, 3), (4, 4)]):
        tree.provider('dev%d' % n, aggs=('even',) if n % 3 == 0 else (),
                      inventory={'FPGA': {'total': total,
                                          'max_unit': max_unit}})
    return tree


@hypothesis.settings(max_examples=40, deadline=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(amounts=st.lists(st.tuples(st.integers(1, 9),
                                             st.booleans()),
                                   min_size=1, max_size=6))
def test_a_page_at_a_time_chooses_as_all_at_once(sqlite_db, uneven,
                                                 monkeypatch, amounts):
    needs = [lease_devices.DeviceNeed(
        'w%d' % n, 'FPGA', amount,
        member_of.parse(['in:' + uneven.aggregate('even')] if even else []))
        for n, (amount, even) in enumerate(amounts)]

    def choose():
        with db_api.get_engine().connect() as conn:
            try:
                return lease_devices.choose(conn, needs, START,
                                            START + HOUR,
                                            pools.Carrier('p1'))
            except device_errors.NoValidAllocation as refused:
                return refused.message
    monkeypatch.setattr(device_pages, 'PAGE', 1000)
    whole = choose()
    monkeypatch.setattr(device_pages, 'PAGE', 2)
    monkeypatch.setattr(device_pages, 'UNITS_PER_PROVIDER', 1000)
    assert choose() == whole
