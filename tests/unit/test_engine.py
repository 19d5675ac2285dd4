"""The quota ledger's semantics (QuotaEngine over DbQuotaDriver) on SQLite:
reserve, commit, rollback, release, expire, purge, usage and limits."""

import datetime

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota.quota import QUOTAS

START = datetime.datetime(2030, 1, 1, 12, 0, 0)
UNKNOWN = '0b8ac5a6-5f3c-4ad4-a8b8-6e1b3e4f7c21'


class Clock:
    """Stands in for ``timeutils.utcnow``: time moves only when told."""

    def __init__(self, now):
        self.now = now

    def __call__(self, with_timezone=False):
        if with_timezone:
            return self.now.replace(tzinfo=datetime.timezone.utc)
        return self.now

    def advance(self, seconds):
        self.now += datetime.timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(START)
    monkeypatch.setattr(timeutils, 'utcnow', clock)
    return clock


@pytest.fixture
def db(sqlite_db, clock):
    """The SQLite ledger, with time standing still at START."""
    return clock


def counts(ctx, project='p1', resource='FPGA'):
    usage = QUOTAS.get_project_usage(ctx, project)[resource]
    return usage['used'], usage['reserved']


def rows(table, metadata=models.Base.metadata, **where):
    table = metadata.tables[table]
    query = sa.select(table).order_by(*table.c)
    for name, value in where.items():
        query = query.where(table.c[name] == value)
    with db_api.get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def status(uuid):
    return rows('reservations', uuid=uuid)[0]['status']


def snapshot():
    """Every row of every table the database holds."""
    tables = sa.MetaData()
    tables.reflect(db_api.get_engine())
    return {name: rows(name, tables) for name in tables.tables}


def limit(ctx, resource, value, project='p1'):
    QUOTAS.limits.set_project_limit(ctx, project, resource, value)


# -- reserve -----------------------------------------------------------------

def test_reserve_holds_each_resource_in_resource_order(db, ctx):
    uuids = QUOTAS.reserve(ctx, 'p1', {'GPU': 2, 'FPGA': 1},
                           request_id='req-1', consumer_id='vm-1')
    held = rows('reservations')
    assert [r['uuid'] for r in held] == uuids
    assert [(r['resource'], r['delta'], r['status']) for r in held] == [
        ('FPGA', 1, 'reserved'), ('GPU', 2, 'reserved')]
    for row in held:
        assert row['project_id'] == 'p1'
        assert row['request_id'] == 'req-1'
        assert row['consumer_id'] == 'vm-1'
        assert row['expire'] == START + datetime.timedelta(days=1)
    assert counts(ctx, resource='FPGA') == (0, 1)
    assert counts(ctx, resource='GPU') == (0, 2)
    usages = rows('quota_usages')
    assert [(u['resource'], u['used'], u['reserved']) for u in usages] == [
        ('FPGA', 0, 1), ('GPU', 0, 2)]
    assert {r['usage_id'] for r in held} == {u['id'] for u in usages}


UTC = datetime.timezone.utc
PLUS2 = datetime.timezone(datetime.timedelta(hours=2))


@pytest.mark.parametrize('expire,expected', [
    (30, START + datetime.timedelta(seconds=30)),
    (0.25, START + datetime.timedelta(seconds=0.25)),
    (3650 * 86400, START + datetime.timedelta(days=3650)),
    (datetime.datetime(2030, 1, 1, 15, tzinfo=PLUS2),
     datetime.datetime(2030, 1, 1, 13)),
    ('2030-01-02T00:00:00Z', datetime.datetime(2030, 1, 2)),
    ('2030-01-01T15:00:00+02:00', datetime.datetime(2030, 1, 1, 13)),
    ('2030-01-01T12:00:01.500000+00:00',
     datetime.datetime(2030, 1, 1, 12, 0, 1, 500000)),
])
def test_reserve_expire_forms(db, ctx, expire, expected):
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, expire=expire)
    assert rows('reservations')[0]['expire'] == expected


def test_reserve_default_expire_is_configured(db, ctx):
    CONF.set_override('reservation_expire', 120, 'quota')
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    assert rows('reservations')[0]['expire'] == START + datetime.timedelta(
        seconds=120)


def test_reserve_up_to_the_limit_and_not_beyond(db, ctx):
    limit(ctx, 'FPGA', 3)
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    before = snapshot()
    with pytest.raises(exception.OverQuota) as over:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    assert over.value.code == 403
    assert over.value.kind == 'over_quota'
    assert over.value.overs == [dict(
        project_id='p1', resource='FPGA', scope='project', limit=3, used=1,
        reserved=2, requested=1)]
    for text in ('p1', 'FPGA', 'limit 3', 'used 1', 'reserved 2',
                 'requested 1'):
        assert text in str(over.value)
    assert snapshot() == before


def test_over_quota_is_all_or_nothing_and_names_every_blocked_resource(
        db, ctx):
    limit(ctx, 'FPGA', 2)
    limit(ctx, 'GPU', 1)
    before = snapshot()
    with pytest.raises(exception.OverQuota) as over:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1, 'GPU': 2})
    assert [o['resource'] for o in over.value.overs] == ['GPU']
    with pytest.raises(exception.OverQuota) as over:
        QUOTAS.reserve(ctx, 'p1', {'GPU': 2, 'FPGA': 3})
    assert over.value.overs == [
        dict(project_id='p1', resource='FPGA', scope='project', limit=2,
             used=0, reserved=0, requested=3),
        dict(project_id='p1', resource='GPU', scope='project', limit=1,
             used=0, reserved=0, requested=2)]
    assert snapshot() == before
    assert len(QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1})) == 2


def test_limit_zero_allows_nothing(db, ctx):
    limit(ctx, 'GPU', 0)
    with pytest.raises(exception.OverQuota) as over:
        QUOTAS.reserve(ctx, 'p1', {'GPU': 1})
    assert over.value.overs[0]['limit'] == 0
    assert QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})


def test_unlimited_by_default(db, ctx):
    big = models.MAX_COUNT // 2
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': big}))
    QUOTAS.reserve(ctx, 'p1', {'FPGA': big})
    usage = QUOTAS.get_project_usage(ctx, 'p1')['FPGA']
    assert usage == dict(limit=-1, used=big, reserved=big, leased=0,
                         promised=0, available=-1)


def test_negative_delta_touches_used_only_on_commit(db, ctx):
    limit(ctx, 'FPGA', 3)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 3}))
    # At the limit, and even with the limit lowered, giving back is allowed.
    limit(ctx, 'FPGA', 1)
    down = QUOTAS.reserve(ctx, 'p1', {'FPGA': -2, 'GPU': 1})
    assert counts(ctx) == (3, 0)
    assert counts(ctx, resource='GPU') == (0, 1)
    QUOTAS.commit(ctx, 'p1', down)
    assert counts(ctx) == (1, 0)
    assert counts(ctx, resource='GPU') == (1, 0)
    QUOTAS.rollback(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': -1}))
    assert counts(ctx) == (1, 0)
    assert not rows('drift_events')


def test_negative_commit_never_takes_used_below_zero(db, ctx):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    first = QUOTAS.reserve(ctx, 'p1', {'FPGA': -1})
    second = QUOTAS.reserve(ctx, 'p1', {'FPGA': -1})
    QUOTAS.commit(ctx, 'p1', first + second)
    assert counts(ctx) == (0, 0)
    [drift] = rows('drift_events', kind='used_below_zero')
    assert (drift['project_id'], drift['resource'], drift['requested'],
            drift['applied']) == ('p1', 'FPGA', -1, 0)


def test_dry_run_checks_and_writes_nothing(db, ctx):
    limit(ctx, 'FPGA', 2)
    before = snapshot()
    assert QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 5},
                          dry_run=True) == []
    assert QUOTAS.reserve(ctx, 'p2', {'FPGA': 1}, dry_run=True) == []
    with pytest.raises(exception.OverQuota) as over:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 3}, dry_run=True)
    assert over.value.overs[0]['requested'] == 3
    with pytest.raises(exception.InvalidDelta):
        QUOTAS.reserve(ctx, 'p1', {'FPGA': -1}, dry_run=True)
    assert snapshot() == before
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    before = snapshot()
    with pytest.raises(exception.OverQuota):
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, dry_run=True)
    assert snapshot() == before


def test_same_request_id_returns_the_same_reservations(db, ctx):
    limit(ctx, 'FPGA', 2)
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1},
                           request_id='req-1')
    before = snapshot()
    # A retry is answered even though the project is now at its limit.
    assert QUOTAS.reserve(ctx, 'p1', {'GPU': 1, 'FPGA': 2},
                          request_id='req-1') == uuids
    assert snapshot() == before
    QUOTAS.commit(ctx, 'p1', uuids)
    assert QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1},
                          request_id='req-1') == uuids
    assert counts(ctx) == (2, 0)
    # Request ids belong to their project.
    other = QUOTAS.reserve(ctx, 'p2', {'FPGA': 2, 'GPU': 1},
                           request_id='req-1')
    assert len(other) == 2 and not set(other) & set(uuids)


@pytest.mark.parametrize('deltas', [
    {'FPGA': 1, 'GPU': 1}, {'FPGA': 2}, {'FPGA': 2, 'GPU': 2},
    {'FPGA': 2, 'GPU': 1, 'VGPU': 1}, {'FPGA': -2, 'GPU': 1}])
def test_same_request_id_other_deltas_is_a_conflict(db, ctx, deltas):
    CONF.set_override('resources', ['VGPU'], 'quota')
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 3}))
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1}, request_id='req-1')
    before = snapshot()
    with pytest.raises(exception.RequestIdConflict) as conflict:
        QUOTAS.reserve(ctx, 'p1', deltas, request_id='req-1')
    assert conflict.value.code == 409
    assert conflict.value.kind == 'request_id_conflict'
    assert 'req-1' in str(conflict.value) and 'p1' in str(conflict.value)
    assert snapshot() == before


# -- commit and rollback -----------------------------------------------------

def test_commit_moves_reserved_to_used_once(db, ctx):
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1},
                           consumer_id='vm-1')
    db.advance(5)
    QUOTAS.commit(ctx, 'p1', uuids)
    assert counts(ctx) == (2, 0)
    assert counts(ctx, resource='GPU') == (1, 0)
    assert [(r['status'], r['updated_at']) for r in rows('reservations')] \
        == [('committed', START + datetime.timedelta(seconds=5))] * 2
    before = snapshot()
    QUOTAS.commit(ctx, 'p1', uuids)
    QUOTAS.commit(ctx, 'p1', uuids[1:])
    assert snapshot() == before
    assert sorted((c['consumer_id'], c['resource'], c['used'])
                  for c in rows('consumer_usages')) == [
        ('vm-1', 'FPGA', 2), ('vm-1', 'GPU', 1)]


def test_rollback_gives_reserved_back_once(db, ctx):
    limit(ctx, 'FPGA', 2)
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    QUOTAS.rollback(ctx, 'p1', uuids)
    assert counts(ctx) == (0, 0)
    assert status(uuids[0]) == 'rolled_back'
    before = snapshot()
    QUOTAS.rollback(ctx, 'p1', uuids)
    assert snapshot() == before
    assert QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    assert not rows('consumer_usages')


def _finished(ctx, clock, how):
    """A reservation of 1 FPGA that was committed, rolled back or expired."""
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, expire=10)
    if how == 'committed':
        QUOTAS.commit(ctx, 'p1', uuids)
    elif how == 'rolled_back':
        QUOTAS.rollback(ctx, 'p1', uuids)
    else:
        clock.advance(11)
        assert QUOTAS.expire(ctx) == 1
    assert status(uuids[0]) == how
    return uuids


@pytest.mark.parametrize('action,how', [
    ('commit', 'rolled_back'), ('commit', 'expired'),
    ('rollback', 'committed')])
def test_finishing_the_other_way_is_a_conflict(db, ctx, action, how):
    uuid = _finished(ctx, db, how)[0]
    pending = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1, 'GPU': 1})
    before = snapshot()
    for batch in ([uuid], pending + [uuid], [uuid] + pending):
        with pytest.raises(exception.ReservationConflict) as conflict:
            getattr(QUOTAS, action)(ctx, 'p1', batch)
        assert conflict.value.code == 409
        assert conflict.value.kind == 'reservation_conflict'
        assert uuid in str(conflict.value) and how in str(conflict.value)
        assert snapshot() == before


def test_rollback_of_an_expired_reservation_does_nothing(db, ctx):
    uuids = _finished(ctx, db, 'expired')
    before = snapshot()
    QUOTAS.rollback(ctx, 'p1', uuids)
    assert snapshot() == before


def test_commit_after_expiry_time_but_before_expire_runs(db, ctx):
    # Expired from its expire time on, whether or not the sweep has run:
    # the commit ends it as expired and says so.
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, expire=10)
    pending = QUOTAS.reserve(ctx, 'p1', {'GPU': 1}, expire=100)
    db.advance(60)
    with pytest.raises(exception.ReservationConflict) as conflict:
        QUOTAS.commit(ctx, 'p1', pending + uuids)
    assert conflict.value.code == 409
    assert str(conflict.value) == (
        'Cannot commit reservation %s: it is already expired.' % uuids[0])
    assert status(uuids[0]) == 'expired'
    assert status(pending[0]) == 'reserved'
    assert counts(ctx) == (0, 0)
    assert QUOTAS.expire(ctx) == 0
    QUOTAS.commit(ctx, 'p1', pending)
    assert counts(ctx, resource='GPU') == (1, 0)


@pytest.mark.parametrize('action', ['commit', 'rollback'])
def test_unknown_reservations_are_not_found(db, ctx, action):
    mine = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    theirs = QUOTAS.reserve(ctx, 'p2', {'FPGA': 1})
    before = snapshot()
    for batch, missing in (([UNKNOWN], UNKNOWN), (theirs, theirs[0]),
                           (mine + [UNKNOWN], UNKNOWN),
                           (mine + theirs, theirs[0])):
        with pytest.raises(exception.ReservationNotFound) as not_found:
            getattr(QUOTAS, action)(ctx, 'p1', batch)
        assert not_found.value.code == 404
        assert missing in str(not_found.value)
        assert 'p1' in str(not_found.value)
        assert mine[0] not in str(not_found.value)
        assert snapshot() == before


def test_a_batch_may_mix_pending_and_done_reservations(db, ctx):
    done = _finished(ctx, db, 'committed')
    pending = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    QUOTAS.commit(ctx, 'p1', pending + done + pending)
    assert counts(ctx) == (3, 0)
    expired = _finished(ctx, db, 'expired')
    pending = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    QUOTAS.rollback(ctx, 'p1', expired + pending)
    assert counts(ctx) == (3, 0)
    assert status(pending[0]) == 'rolled_back'


# -- release -----------------------------------------------------------------

def test_release_takes_used_at_once(db, ctx):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(
        ctx, 'p1', {'FPGA': 3, 'GPU': 2}, consumer_id='vm-1'))
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    uuids = QUOTAS.release(ctx, 'p1', {'GPU': 2, 'FPGA': 1},
                           consumer_id='vm-1')
    assert counts(ctx) == (2, 1)
    assert counts(ctx, resource='GPU') == (0, 0)
    released = [rows('reservations', uuid=u)[0] for u in uuids]
    assert [(r['resource'], r['delta'], r['status'], r['consumer_id'])
            for r in released] == [('FPGA', -1, 'committed', 'vm-1'),
                                   ('GPU', -2, 'committed', 'vm-1')]
    assert sorted((c['resource'], c['used']) for c in rows(
        'consumer_usages', consumer_id='vm-1')) == [('FPGA', 2), ('GPU', 0)]
    assert not rows('drift_events')


def test_release_below_zero_is_recorded_as_drift(db, ctx):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1},
                                            consumer_id='vm-1'))
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1},
                                            consumer_id='vm-2'))
    [uuid] = QUOTAS.release(ctx, 'p1', {'FPGA': 3}, consumer_id='vm-1')
    assert counts(ctx) == (0, 0)
    assert rows('reservations', uuid=uuid)[0]['delta'] == -2
    drift = {d['kind']: d for d in rows('drift_events')}
    assert set(drift) == {'release_below_zero', 'consumer_release_below_zero'}
    project = drift['release_below_zero']
    assert (project['project_id'], project['resource'], project['consumer_id'],
            project['requested'], project['applied']) == (
        'p1', 'FPGA', 'vm-1', 3, 2)
    consumer = drift['consumer_release_below_zero']
    assert (consumer['requested'], consumer['applied']) == (3, 1)
    assert {c['consumer_id']: c['used'] for c in rows('consumer_usages')} \
        == {'vm-1': 0, 'vm-2': 1}


def test_release_of_what_the_project_never_had(db, ctx):
    [uuid] = QUOTAS.release(ctx, 'p1', {'GPU': 2})
    assert counts(ctx, resource='GPU') == (0, 0)
    assert rows('reservations', uuid=uuid)[0]['delta'] == 0
    assert sorted((d['kind'], d['requested'], d['applied'])
                  for d in rows('drift_events')) == [
        ('consumer_release_below_zero', 2, 0), ('release_below_zero', 2, 0)]


def test_consumer_usages_follow_commits_and_releases(db, ctx):
    for consumer, amount in (('vm-1', 2), ('vm-2', 1), (None, 3)):
        QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(
            ctx, 'p1', {'FPGA': amount}, consumer_id=consumer))
    QUOTAS.rollback(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 5},
                                              consumer_id='vm-3'))
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 4}, consumer_id='vm-4')
    QUOTAS.release(ctx, 'p1', {'FPGA': 1}, consumer_id='vm-1')
    QUOTAS.release(ctx, 'p1', {'FPGA': 2})
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': -1},
                                            consumer_id='vm-2'))
    assert {c['consumer_id']: c['used'] for c in rows('consumer_usages')} \
        == {'vm-1': 1, 'vm-2': 0, '': 1}
    assert counts(ctx) == (2, 4)
    assert not rows('drift_events')


# -- expire and purge --------------------------------------------------------

def test_expire_rolls_back_what_has_expired(db, ctx):
    short = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1}, expire=10)
    later = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, expire=20)
    committed = QUOTAS.reserve(ctx, 'p2', {'FPGA': 1}, expire=5)
    QUOTAS.commit(ctx, 'p2', committed)
    QUOTAS.release(ctx, 'p2', {'FPGA': 1})
    db.advance(10)
    assert QUOTAS.expire(ctx) == 0
    db.advance(0.001)
    assert QUOTAS.expire(ctx) == 2
    assert [status(u) for u in short] == ['expired'] * 2
    assert status(later[0]) == 'reserved'
    assert status(committed[0]) == 'committed'
    assert counts(ctx) == (0, 1)
    assert counts(ctx, resource='GPU') == (0, 0)
    assert QUOTAS.expire(ctx) == 0
    db.advance(10)
    assert QUOTAS.expire(ctx) == 1
    assert counts(ctx) == (0, 0)


def test_expire_of_a_negative_reservation(db, ctx):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}))
    down = QUOTAS.reserve(ctx, 'p1', {'FPGA': -1}, expire=1)
    db.advance(2)
    assert QUOTAS.expire(ctx) == 1
    assert status(down[0]) == 'expired'
    assert counts(ctx) == (2, 0)


def test_expire_works_through_batches(db, ctx):
    CONF.set_override('batch_size', 2, 'quota')
    for project in ('p1', 'p2', 'p3'):
        for _ in range(3):
            QUOTAS.reserve(ctx, project, {'FPGA': 1, 'GPU': 1}, expire=1)
    db.advance(2)
    assert QUOTAS.expire(ctx) == 18
    assert {r['status'] for r in rows('reservations')} == {'expired'}
    assert {(u['used'], u['reserved']) for u in rows('quota_usages')} == {
        (0, 0)}


def test_purge_deletes_finished_rows_after_retention(db, ctx):
    CONF.set_override('batch_size', 2, 'quota')
    done = (_finished(ctx, db, 'committed') + _finished(ctx, db, 'expired')
            + _finished(ctx, db, 'rolled_back'))
    done += QUOTAS.release(ctx, 'p1', {'FPGA': 1})
    pending = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, request_id='req-1')
    usages = rows('quota_usages')
    # The first row finished at START, the others 11 s later (expiry).
    db.advance(7 * 86400 - 12)
    assert QUOTAS.purge(ctx) == 0
    db.advance(13)
    assert QUOTAS.purge(ctx) == len(done)
    assert [r['uuid'] for r in rows('reservations')] == pending
    assert rows('quota_usages') == usages
    with pytest.raises(exception.ReservationNotFound):
        QUOTAS.commit(ctx, 'p1', done[:1])
    assert QUOTAS.purge(ctx) == 0


def test_purge_with_zero_retention_and_a_reused_request_id(db, ctx):
    CONF.set_override('reservation_retention', 0, 'quota')
    first = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, request_id='req-1')
    QUOTAS.commit(ctx, 'p1', first)
    assert QUOTAS.purge(ctx) == 0
    db.advance(1)
    assert QUOTAS.purge(ctx) == 1
    second = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, request_id='req-1')
    assert second != first
    assert counts(ctx) == (1, 1)


def test_purge_keeps_unresolved_drift(db, ctx):
    CONF.set_override('reservation_retention', 0, 'quota')
    QUOTAS.release(ctx, 'p1', {'FPGA': 1})
    db.advance(1)
    assert QUOTAS.purge(ctx) == 1
    assert len(rows('drift_events')) == 2


# -- usage and limits --------------------------------------------------------

def test_usage_lists_every_known_resource(db, ctx):
    CONF.set_override('resources', ['VGPU', 'CUSTOM_NPU'], 'quota')
    assert QUOTAS.resources == ('FPGA', 'GPU', 'CUSTOM_NPU', 'VGPU')
    QUOTAS.reserve(ctx, 'p1', {'CUSTOM_NPU': 2})
    empty = dict(limit=-1, used=0, reserved=0, leased=0, promised=0,
                 available=-1)
    assert QUOTAS.get_project_usage(ctx, 'p1') == {
        'FPGA': empty, 'GPU': empty, 'VGPU': empty,
        'CUSTOM_NPU': dict(limit=-1, used=0, reserved=2, leased=0,
                           promised=0, available=-1)}
    assert QUOTAS.get_project_usage(ctx, 'nobody') == dict.fromkeys(
        QUOTAS.resources, empty)


def test_available_is_what_is_left_and_never_negative(db, ctx):
    limit(ctx, 'FPGA', 5)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}))
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    assert QUOTAS.get_project_usage(ctx, 'p1')['FPGA'] == dict(
        limit=5, used=2, reserved=1, leased=0, promised=0, available=2)
    limit(ctx, 'FPGA', 1)
    assert QUOTAS.get_project_usage(ctx, 'p1')['FPGA'] == dict(
        limit=1, used=2, reserved=1, leased=0, promised=0, available=0)


def test_project_limit_beats_registered_beats_default(db, ctx):
    source = QUOTAS.limits

    def fpga_limit():
        return QUOTAS.get_project_usage(ctx, 'p1')['FPGA']['limit']

    assert fpga_limit() == -1
    CONF.set_override('default_limit', 5, 'quota')
    assert fpga_limit() == 5
    source.set_registered_limit(ctx, 'FPGA', 3)
    source.set_registered_limit(ctx, 'FPGA', 4)
    assert fpga_limit() == 4
    limit(ctx, 'FPGA', 7)
    limit(ctx, 'FPGA', 6)
    assert fpga_limit() == 6
    limit(ctx, 'FPGA', -1)
    assert fpga_limit() == -1
    limit(ctx, 'FPGA', 0)
    assert fpga_limit() == 0
    source.delete_project_limit(ctx, 'p1', 'FPGA')
    assert fpga_limit() == 4
    limit(ctx, 'FPGA', 9, project='p2')
    assert fpga_limit() == 4
    assert QUOTAS.get_project_usage(ctx, 'p1')['GPU']['limit'] == 5
    assert source.source.get_limits(ctx, 'p2', ['FPGA', 'GPU']) == (
        {'FPGA': 4}, {'FPGA': 9})


def test_reserve_follows_limit_changes(db, ctx):
    QUOTAS.limits.set_registered_limit(ctx, 'GPU', 1)
    QUOTAS.reserve(ctx, 'p1', {'GPU': 1})
    with pytest.raises(exception.OverQuota):
        QUOTAS.reserve(ctx, 'p1', {'GPU': 1})
    limit(ctx, 'GPU', 2)
    QUOTAS.reserve(ctx, 'p1', {'GPU': 1})
    QUOTAS.limits.delete_project_limit(ctx, 'p1', 'GPU')
    with pytest.raises(exception.OverQuota) as over:
        QUOTAS.reserve(ctx, 'p1', {'GPU': 1})
    assert over.value.overs[0]['limit'] == 1
    assert over.value.overs[0]['reserved'] == 2


def test_a_batch_is_applied_in_creation_order(db, ctx):
    # The -1 was reserved while 1 was used, then a release took that 1, so
    # it can no longer be applied in full: the books must not depend on
    # how the batch's (random) uuids happen to sort.
    outcomes = set()
    for i in range(20):
        project = 'p%d' % i
        QUOTAS.commit(ctx, project, QUOTAS.reserve(ctx, project, {'FPGA': 1}))
        down = QUOTAS.reserve(ctx, project, {'FPGA': -1})
        QUOTAS.release(ctx, project, {'FPGA': 1})
        up = QUOTAS.reserve(ctx, project, {'FPGA': 2})
        QUOTAS.commit(ctx, project, up + down)
        drift = rows('drift_events', project_id=project,
                     kind='used_below_zero')
        outcomes.add((counts(ctx, project), len(drift)))
    assert outcomes == {((2, 0), 1)}
