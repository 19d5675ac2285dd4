"""The bounds of a project's leases on the embedded database: how many it
holds (``[leases] max_leases_per_project``, ERROR leases included), how
long a lease lasts (``min_duration``, ``max_duration``), how large a
``member_of`` is; and a policy service that cannot decide leaves no ERROR
lease behind."""

import datetime
import threading
import time

import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota.leases import store
from cyquota.placement import device_errors
from tests.unit.test_engine import clock, rows  # noqa: F401,H301
from tests.unit.test_leases import LEASES, at, lease, pool  # noqa: F401,H301

# Two devices of 2 FPGAs, a limit of 4 FPGAs a project, the clock at START.
pytestmark = pytest.mark.usefixtures('pool')

YEAR = datetime.timedelta(seconds=CONF.leases.max_duration)
SECOND = datetime.timedelta(seconds=1)


@pytest.fixture(autouse=True)
def _options():
    yield
    for name in list(CONF.leases):
        CONF.clear_override(name, 'leases')
    CONF.clear_override('timeout', 'enforcement_external')


def _iso(moment):
    return moment.isoformat() + '+00:00'


def _held(project='p1'):
    return sorted(row['status'] for row in rows('leases')
                  if row['project_id'] == project)


def test_a_project_holds_at_most_max_leases_per_project(ctx):
    CONF.set_override('max_leases_per_project', 3, 'leases')
    made = [lease(ctx, 1, at(hour), at(hour + 1)) for hour in (1, 2, 3)]
    with pytest.raises(exception.LeaseLimitExceeded) as refused:
        lease(ctx, 1, at(4), at(5))
    assert (refused.value.code, refused.value.kind) == (403, 'lease_limit')
    assert str(refused.value) == (
        'Project p1 holds as many leases as [leases] max_leases_per_project '
        'allows (3: PENDING, ACTIVE, and ERROR until their end_date); end '
        'one before creating another.')
    assert _held() == ['PENDING'] * 3
    # Another project's leases are its own.
    assert lease(ctx, 1, at(4), at(5), project='p2')['status'] == 'PENDING'
    # An ended lease holds nothing: its slot is free again.
    LEASES.delete(ctx, made[0]['id'])
    assert lease(ctx, 1, at(4), at(5))['status'] == 'PENDING'
    with pytest.raises(exception.LeaseLimitExceeded):
        lease(ctx, 1, 'now', at(1))


def test_active_leases_count_until_they_end(ctx, clock):  # noqa: F811
    CONF.set_override('max_leases_per_project', 1, 'leases')
    lease(ctx, 1, 'now', at(1))
    with pytest.raises(exception.LeaseLimitExceeded):
        lease(ctx, 1, at(1), at(2))
    clock.advance(3600)
    assert LEASES.end_due(ctx) == 1
    assert lease(ctx, 1, at(2), at(3))['status'] == 'PENDING'


@pytest.fixture
def service():
    from tests import enforcement_helpers
    with enforcement_helpers.asked_by_the_leases() as recording:
        yield recording


def test_error_leases_count_until_their_end_and_the_full_project_asks_none(
        service, ctx, clock):  # noqa: F811
    CONF.set_override('max_leases_per_project', 2, 'leases')
    service.answer = (403, b'{"message": "over budget"}')
    for hour in (1, 2):
        with pytest.raises(exception.EnforcementDenied):
            lease(ctx, 1, at(hour), at(hour + 1))
    assert _held() == ['ERROR', 'ERROR']
    asked = len(service.requests)
    with pytest.raises(exception.LeaseLimitExceeded):
        lease(ctx, 1, at(1), at(2))
    # Refused before the policy service is asked, and nothing stored.
    assert len(service.requests) == asked
    assert _held() == ['ERROR', 'ERROR']
    # The first refused lease's window has passed: it holds no slot.
    clock.advance(2 * 3600)
    service.answer = (204, b'')
    assert lease(ctx, 1, at(3), at(4))['status'] == 'PENDING'


def test_a_denial_when_the_last_slot_is_taken_meanwhile_stores_nothing(
        service, ctx):
    # The count is taken again under the project's lock before an ERROR
    # lease is stored: a slot taken while the service was asked is gone.
    CONF.set_override('max_leases_per_project', 1, 'leases')
    service.answer = (403, b'{"message": "no"}')
    service.delay = 1
    outcome = []

    def slow_create():
        try:
            lease(ctx, 1, at(1), at(2))
        except exception.CyquotaException as refused:
            outcome.append(refused)

    slow = threading.Thread(target=slow_create)
    slow.start()
    while not service.requests:  # The slow create is being answered.
        time.sleep(0.01)
    service.delay = 0
    with pytest.raises(exception.EnforcementDenied):
        lease(ctx, 1, at(3), at(4))
    slow.join()
    assert [type(each) for each in outcome] == [
        exception.LeaseLimitExceeded]
    assert _held() == ['ERROR']


@pytest.mark.parametrize('answer', [(500, b'{"message": "internal"}'),
                                    (200, b''), 'timeout', 'refused'])
def test_a_service_that_cannot_decide_leaves_no_error_lease(
        service, ctx, answer):
    CONF.set_override('timeout', 0.3, 'enforcement_external')
    if answer == 'timeout':
        service.delay = 2
    elif answer == 'refused':
        service.stop()
    else:
        service.answer = answer
    with pytest.raises(exception.EnforcementUnavailable) as refused:
        lease(ctx, 1, at(1), at(2))
    # Answered as a denial (SPEC 3.3), but there is nothing to list.
    assert (refused.value.code, refused.value.kind) == (
        403, 'enforcement_denied')
    assert str(refused.value).startswith(
        'The usage enforcement service could not decide (')
    assert rows('leases') == [] and rows('lease_reservations') == []


def test_a_denial_still_leaves_an_error_lease(service, ctx):
    service.answer = (403, b'{"message": "no"}')
    with pytest.raises(exception.EnforcementDenied) as denied:
        lease(ctx, 1, at(1), at(2))
    assert not isinstance(denied.value, exception.EnforcementUnavailable)
    assert _held() == ['ERROR']


# -- durations ---------------------------------------------------------------

@pytest.mark.parametrize('length, field', [
    (datetime.timedelta(microseconds=1), 'end_date'),
    (59 * SECOND, 'end_date'),
    (YEAR + SECOND, 'end_date')])
def test_a_lease_too_short_or_too_long_is_a_400(ctx, length, field):
    start = datetime.datetime(2030, 1, 1, 13)
    with pytest.raises(exception.InvalidLease) as invalid:
        lease(ctx, 1, _iso(start), _iso(start + length))
    assert invalid.value.kwargs['field'] == field
    assert invalid.value.code == 400
    assert rows('leases') == []


def test_the_bounds_themselves_are_allowed(ctx):
    start = datetime.datetime(2030, 1, 1, 13)
    for length in (60 * SECOND, YEAR):
        made = lease(ctx, 1, _iso(start), _iso(start + length))
        assert made['status'] == 'PENDING'
        start += YEAR


def test_the_durations_follow_the_options(ctx):
    CONF.set_override('min_duration', 0, 'leases')
    CONF.set_override('max_duration', 7200, 'leases')
    start = datetime.datetime(2030, 1, 1, 13)
    assert lease(ctx, 1, _iso(start), _iso(start + SECOND))['status'] == (
        'PENDING')
    assert lease(ctx, 1, at(2), at(4))['status'] == 'PENDING'
    with pytest.raises(exception.InvalidLease) as invalid:
        lease(ctx, 1, at(4), _iso(datetime.datetime(2030, 1, 1, 18, 0, 1)))
    assert str(invalid.value) == (
        'Invalid lease: end_date: the lease would last 7201 s, more than '
        '[leases] max_duration = 7200 s')


def test_an_active_lease_is_measured_from_its_start(
        ctx, clock):  # noqa: F811
    CONF.set_override('max_duration', 3 * 3600, 'leases')
    made = lease(ctx, 1, 'now', at(2))
    clock.advance(3600)
    LEASES.update(ctx, made['id'], {'end_date': at(3)})
    with pytest.raises(exception.InvalidLease) as invalid:
        LEASES.update(ctx, made['id'], {'end_date': at(3.5)})
    assert invalid.value.kwargs['field'] == 'end_date'
    # Shorter than min_duration from its start: refused too.
    with pytest.raises(exception.InvalidLease):
        LEASES.update(ctx, made['id'],
                      {'end_date': _iso(datetime.datetime(2030, 1, 1, 12,
                                                          0, 30))})
    assert LEASES.get(ctx, made['id'])['end_date'] == at(3)


def test_a_pending_update_is_bounded_too(ctx):
    made = lease(ctx, 1, at(1), at(2))
    with pytest.raises(exception.InvalidLease):
        LEASES.update(ctx, made['id'], {'end_date': _iso(
            datetime.datetime(2030, 1, 1, 13) + YEAR + SECOND)})
    with pytest.raises(exception.InvalidLease):
        LEASES.update(ctx, made['id'], {'start_date': _iso(
            datetime.datetime(2030, 1, 1, 13, 59, 30))})
    assert LEASES.get(ctx, made['id']) == made


# -- member_of ---------------------------------------------------------------

def _aggregate(n):
    return '%08x-0000-0000-0000-%012x' % (n, n)


def _lease_in(ctx, member_of):
    return LEASES.create(ctx, 'p1', dict(
        start_date=at(1), end_date=at(2), reservations=[
            {'resource_type': 'accelerator:FPGA', 'amount': 1,
             'member_of': member_of}]))


@pytest.mark.parametrize('member_of, detail', [
    ([_aggregate(n) for n in range(17)],
     'at most 16 values ([leases] max_member_of_entries), got 17'),
    (['in:' + ','.join(_aggregate(n) for n in range(28))],
     'at most 1024 bytes in all ([leases] max_member_of_bytes), got 1038'),
    # Bytes, not characters: refused before it is parsed.
    (['\u00e9' * 513],
     'at most 1024 bytes in all ([leases] max_member_of_bytes), got 1026'),
])
def test_a_member_of_too_large_is_a_400_naming_it(ctx, member_of,
                                                  detail):
    with pytest.raises(exception.InvalidLease) as invalid:
        _lease_in(ctx, member_of)
    assert invalid.value.kwargs['field'] == 'reservations[0].member_of'
    assert str(invalid.value) == (
        'Invalid lease: reservations[0].member_of: ' + detail)
    assert rows('leases') == []


def test_a_member_of_at_its_bounds_is_judged_on_its_merits(ctx):
    widest = ['in:' + ','.join(_aggregate(n) for n in range(27))]
    CONF.set_override('max_member_of_bytes', len(widest[0]), 'leases')
    for member_of in ([_aggregate(n) for n in range(16)], widest):
        # No device is in these aggregates.
        with pytest.raises(device_errors.NoValidAllocation):
            _lease_in(ctx, member_of)


def _count(ctx):
    from cyquota.db import api as db_api
    from cyquota.db import models
    with db_api.reader_connection(ctx) as conn:
        return store.held(conn, 'p1', models.utcnow(), 1000)


def test_the_count_follows_creates_starts_and_ends(ctx, clock):  # noqa: F811
    made = [lease(ctx, 1, 'now', at(1)), lease(ctx, 1, at(1), at(2)),
            lease(ctx, 1, at(2), at(3))]
    assert _count(ctx) == 3
    LEASES.delete(ctx, made[1]['id'])
    assert _count(ctx) == 2
    # A refused create takes nothing; a start changes nothing.
    with pytest.raises(device_errors.NoValidAllocation):
        lease(ctx, 5, at(2), at(3))
    clock.advance(2 * 3600)
    assert (LEASES.end_due(ctx), LEASES.start_due(ctx)) == (1, 1)
    assert _count(ctx) == 1
    with pytest.raises(exception.LeaseConflict):
        LEASES.delete(ctx, made[0]['id'])
    assert _count(ctx) == 1
    assert [row['live'] for row in rows('lease_projects')] == [1]


def test_the_bound_over_rest_is_a_403_naming_it(sqlite_db):
    import webtest

    from cyquota.api import app
    CONF.set_override('max_leases_per_project', 1, 'leases')
    client = webtest.TestApp(app.setup_app())
    member = {'X-Project-Id': 'p1', 'X-User-Id': 'u1', 'X-Roles': 'member'}
    body = {'lease': {'start_date': at(1), 'end_date': at(2), 'reservations': [
        {'resource_type': 'accelerator:FPGA', 'amount': 1}]}}
    client.post_json('/v1/leases', body, headers=member, status=201)
    refused = client.post_json('/v1/leases', body, headers=member,
                               status=403).json['errors'][0]
    assert (refused['code'], refused['detail']) == (
        'cyquota.lease_limit',
        'Project p1 holds as many leases as [leases] max_leases_per_project '
        'allows (1: PENDING, ACTIVE, and ERROR until their end_date); end '
        'one before creating another.')


def test_the_migration_counts_the_live_leases_there_are(tmp_path):
    import sqlalchemy as sa

    from cyquota.db import api as db_api
    from cyquota.db import migration
    from tests import fixtures
    fixtures.use_database('sqlite:///%s' % (tmp_path / 'old.sqlite'),
                          migrate=False)
    migration.upgrade('leases_0004')
    leases = sa.table('leases', *(sa.column(name) for name in (
        'id', 'project_id', 'name', 'start_date', 'end_date', 'status',
        'created_at')))
    with db_api.get_engine().begin() as conn:
        conn.execute(leases.insert(), [
            dict(id='l%d' % n, project_id=project, name='l%d' % n,
                 start_date=datetime.datetime(2030, 1, 1),
                 end_date=datetime.datetime(2030, 1, 2), status=status,
                 created_at=datetime.datetime(2029, 12, n + 1))
            for n, (project, status) in enumerate([
                ('p1', 'PENDING'), ('p1', 'ACTIVE'), ('p1', 'ENDED'),
                ('p2', 'ERROR'), ('p3', 'PENDING')])])
    migration.upgrade()
    assert sorted((row['project_id'], row['live'])
                  for row in rows('lease_projects')) == [('p1', 2),
                                                         ('p3', 1)]
