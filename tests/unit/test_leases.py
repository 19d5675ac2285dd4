"""Leases on the embedded database, with a clock the tests move: windows
against quota and device capacity, the promise to ordinary reserves, start
and end by the periodic work, updates and early ends."""

import datetime
import io
import json
import logging
import threading
import uuid

from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log
import pytest

from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota import context
from cyquota import exception
from cyquota import leases
from cyquota.placement import device_errors
from cyquota.quota import QUOTAS
from tests.unit.placement.conftest import Tree
from tests.unit import strict_two_level
from tests.unit.test_engine import START, clock, rows  # noqa: F401,H301

LEASES = leases.LEASES
HOUR = datetime.timedelta(hours=1)


def at(hours):
    """START + ``hours``, as the API writes dates."""
    return (START + hours * HOUR).isoformat() + '+00:00'


@pytest.fixture
def pool(sqlite_db, clock, ctx):  # noqa: F811 (the fixture imported above)
    """Two devices of 2 FPGAs each, and a limit of 4 FPGAs a project."""
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev1', parent='cn1', inventory={'FPGA': {'total': 2}})
    tree.provider('dev2', parent='cn1', inventory={'FPGA': {'total': 2}})
    QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 4)
    LEASES.reset()
    tree.clock = clock
    return tree


def lease(ctx, amount, start, end, project='p1', **extra):
    body = dict(start_date=start, end_date=end, reservations=[
        {'resource_type': 'accelerator:FPGA', 'amount': amount}], **extra)
    return LEASES.create(ctx, project, body)


def usage(ctx, project='p1'):
    return QUOTAS.get_project_usage(ctx, project)['FPGA']


def test_a_lease_starting_now_is_active_and_holds_its_devices(pool, ctx):
    made = lease(ctx, 3, 'now', at(2))
    assert made['status'] == 'ACTIVE'
    assert made['start_date'] == at(0)
    [reservation] = made['reservations']
    assert reservation['resource_type'] == 'accelerator:FPGA'
    assert sorted((a['resource_provider_name'], a['amount'])
                  for a in reservation['allocations']) == [
        ('dev1', 2), ('dev2', 1)]
    assert usage(ctx) == dict(limit=4, used=3, reserved=0, leased=3,
                              promised=0, available=1)
    consumers = rows('device_allocations', consumer_id=made['id'])
    assert sum(r['used'] for r in consumers) == 3


@pytest.mark.parametrize('start', ['now', at(1)])
def test_a_create_answers_the_lease_as_stored(pool, ctx, start):
    # The answer is built from what the create wrote: a read gives it back.
    made = LEASES.create(ctx, 'p1', dict(
        name='two', start_date=start, end_date=at(2), reservations=[
            {'resource_type': 'accelerator:FPGA', 'amount': 3},
            {'resource_type': 'accelerator:FPGA', 'amount': 1,
             'member_of': [], 'member_key': None}]))
    assert [len(r['allocations']) for r in made['reservations']] == [2, 1]
    assert LEASES.get(ctx, made['id']) == made


def test_ids_are_uuids_in_the_order_they_were_made(pool, ctx):
    # Version 7: they begin with the time, so that new rows go to the end
    # of the tables' primary keys.
    ids = []
    for hour in range(1, 4):
        made = LEASES.create(ctx, 'p1', dict(
            start_date=at(hour), end_date=at(hour + 1), reservations=[
                {'resource_type': 'accelerator:FPGA', 'amount': 1}] * 2))
        ids += [made['id']] + [r['id'] for r in made['reservations']]
    assert [uuid.UUID(each).version for each in ids] == [7] * 9
    assert [str(uuid.UUID(each)) for each in ids] == ids
    assert sorted(ids) == ids


def test_a_future_lease_is_promised_and_refuses_ordinary_reserves(pool,
                                                                  ctx):
    made = lease(ctx, 3, at(1), at(2))
    assert made['status'] == 'PENDING'
    assert usage(ctx) == dict(limit=4, used=0, reserved=0, leased=0,
                              promised=3, available=1)
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    with pytest.raises(exception.OverQuota) as over:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    assert over.value.overs == [dict(
        project_id='p1', resource='FPGA', scope='project', limit=4, used=0,
        reserved=1, requested=1, promised=3)]


def test_overlapping_leases_share_the_limit_and_adjacent_ones_do_not(
        pool, ctx):
    pool.provider('dev3', parent='cn1', inventory={'FPGA': {'total': 8}})
    lease(ctx, 2, at(1), at(3))
    lease(ctx, 2, at(2), at(4))
    with pytest.raises(exception.OverQuota) as over:
        lease(ctx, 1, at(2), at(3))
    assert over.value.overs[0]['scope'] == 'project'
    assert over.value.overs[0]['leases'] == 4

    assert lease(ctx, 2, at(3), at(4), project='p2')['status'] == 'PENDING'
    assert usage(ctx)['promised'] == 4


def test_device_capacity_over_the_window(pool, ctx):
    lease(ctx, 4, at(1), at(2), project='p1')
    with pytest.raises(device_errors.NoValidAllocation):
        lease(ctx, 1, at(1), at(3), project='p2')
    assert lease(ctx, 4, at(2), at(3), project='p2')['status'] == 'PENDING'
    # An ordinary claim now must leave room for the promised devices.
    with pytest.raises(device_errors.NoValidAllocation):
        QUOTAS.reserve(ctx, 'p3', {'FPGA': 1}, consumer_id='vm-1',
                       devices={'resources': 'FPGA:1'})


def test_start_and_end_by_the_periodic_work(pool, ctx, clock):  # noqa: F811
    made = lease(ctx, 2, at(1), at(2))
    assert LEASES.start_due(ctx) == 0
    clock.advance(3600)
    assert LEASES.start_due(ctx) == 1
    assert LEASES.start_due(ctx) == 0
    assert LEASES.get(ctx, made['id'])['status'] == 'ACTIVE'
    assert usage(ctx) == dict(limit=4, used=2, reserved=0, leased=2,
                              promised=0, available=2)
    clock.advance(3600)
    assert LEASES.end_due(ctx) == 1
    assert LEASES.end_due(ctx) == 0
    assert LEASES.get(ctx, made['id'])['status'] == 'ENDED'
    assert usage(ctx) == dict(limit=4, used=0, reserved=0, leased=0,
                              promised=0, available=4)
    assert rows('device_allocations') == []
    assert rows('consumer_usages', consumer_id=made['id'])[0]['used'] == 0


def _periodic_lines(name):
    """Run the conductor's periodic task ``name`` once in a thread of its
    own, as its worker does, then log a line from that thread; returns
    the lines as the conductor's log formats them."""
    task = {task.__name__: task for task, _, _
            in conductor_service._periodic_tasks('unit-conductor')}[name]
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log_conf = cfg.ConfigOpts()  # The conductor's logging options.
    log.register_options(log_conf)
    log_conf([])
    handler.setFormatter(formatters.ContextFormatter(config=log_conf))
    logger = logging.getLogger('cyquota')
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)

    def periodic_loop():
        task()
        conductor_service.LOG.info('the periodic loop goes on')

    try:
        runner = threading.Thread(target=periodic_loop)
        runner.start()
        runner.join()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return stream.getvalue().splitlines()


def test_a_scheduled_end_leaves_the_periodic_log_lines_anonymous(
        pool, ctx, clock):  # noqa: F811
    owner = context.RequestContext(user_id='lease-owner-user',
                                   project_id='lease-owner-project',
                                   overwrite=False)
    lease(owner, 1, 'now', at(1), project='lease-owner-project')
    clock.advance(3600)
    lines = _periodic_lines('start_and_end_leases')
    assert any('ended' in line for line in lines)
    [after] = [line for line in lines if 'the periodic loop goes on' in line]
    assert 'lease-owner' not in after


def test_delete_ends_early_and_gives_everything_back(pool, ctx):
    pending = lease(ctx, 2, at(1), at(2))
    active = lease(ctx, 2, 'now', at(2))
    LEASES.delete(ctx, pending['id'])
    LEASES.delete(ctx, active['id'])
    assert [LEASES.get(ctx, made['id'])['status']
            for made in (pending, active)] == ['ENDED', 'ENDED']
    assert usage(ctx)['available'] == 4
    with pytest.raises(exception.LeaseConflict):
        LEASES.delete(ctx, active['id'])
    with pytest.raises(exception.LeaseConflict):
        LEASES.update(ctx, active['id'], {'name': 'again'})


def test_delete_shows_when_the_lease_really_ended(pool, ctx, clock):  # noqa
    pending = lease(ctx, 1, at(2), at(3))
    active = lease(ctx, 1, 'now', at(2))
    due = lease(ctx, 1, 'now', at(1))
    clock.advance(1800)
    LEASES.delete(ctx, pending['id'])
    LEASES.delete(ctx, active['id'])
    clock.advance(1800)
    assert LEASES.end_due(ctx) == 1
    shown = {made['id']: LEASES.get(ctx, made['id'])
             for made in (pending, active, due)}
    # An ACTIVE lease's window really was [start_date, the DELETE).
    assert (shown[active['id']]['end_date'],
            shown[active['id']]['status_reason']) == (
        at(0.5), 'ended early by DELETE; scheduled end was ' + at(2))
    assert [reservation['amount'] for reservation
            in shown[active['id']]['reservations']] == [1]
    # A PENDING one never began: its dates stay.
    assert ((shown[pending['id']]['start_date'],
             shown[pending['id']]['end_date'],
             shown[pending['id']]['status_reason'])
            == (at(2), at(3), 'cancelled by DELETE before its start'))
    # At its scheduled end, as it was.
    assert (shown[due['id']]['end_date'],
            shown[due['id']]['status_reason']) == (at(1), None)
    # Its calendar rows keep the window it had.
    assert [(row['end_date'], row['span']) for table
            in ('lease_reservations', 'lease_allocations')
            for row in rows(table, lease_id=active['id'])] == [
        (START + HOUR / 2, 1800)] * 2


def test_update_rechecks_the_window_and_a_refusal_changes_nothing(pool, ctx):
    pool.provider('dev3', parent='cn1', inventory={'FPGA': {'total': 8}})
    first = lease(ctx, 2, at(1), at(2))
    second = lease(ctx, 2, at(3), at(4))
    with pytest.raises(exception.OverQuota):
        LEASES.update(ctx, first['id'], {'end_date': at(4), 'reservations': [
            {'id': first['reservations'][0]['id'], 'amount': 3}]})
    assert LEASES.get(ctx, first['id']) == first
    changed = LEASES.update(ctx, first['id'], {
        'name': 'longer', 'end_date': at(3), 'reservations': [
            {'id': first['reservations'][0]['id'], 'amount': 2}]})
    assert (changed['name'], changed['end_date']) == ('longer', at(3))
    assert LEASES.get(ctx, second['id'])['status'] == 'PENDING'


def test_bad_input_names_the_field_and_writes_nothing(pool, ctx):
    for body, field in [
            (dict(end_date=at(1), start_date='2030-01-01T13:00:00'),
             'start_date'),
            (dict(end_date=at(1), start_date=at(-1)), 'start_date'),
            (dict(end_date=at(1), start_date=at(1)), 'end_date'),
            (dict(end_date=at(1), reservations=[
                {'resource_type': 'FPGA', 'amount': 1}]),
             'reservations[0].resource_type'),
            (dict(end_date=at(1), reservations=[
                {'resource_type': 'accelerator:NOPE', 'amount': 1}]),
             'reservations[0].resource_type'),
            (dict(end_date=at(1), reservations=[
                {'resource_type': 'accelerator:FPGA', 'amount': 0}]),
             'reservations[0].amount'),
            (dict(end_date=at(1), reservations=[
                {'resource_type': 'accelerator:FPGA', 'amount': 1,
                 'member_of': ['in:x,y']}]),
             'reservations[0].member_of')]:
        body.setdefault('reservations', [
            {'resource_type': 'accelerator:FPGA', 'amount': 1}])
        with pytest.raises(exception.InvalidLease) as invalid:
            LEASES.create(ctx, 'p1', body)
        assert invalid.value.kwargs['field'] == field
        assert invalid.value.code == 400
    assert rows('leases') == []


# -- the usage-enforcement filters at their call points ---------------------

@pytest.fixture
def service(pool):
    """A real policy service on 127.0.0.1 that the ExternalServiceFilter
    asks; it allows until told otherwise."""
    from tests import enforcement_helpers
    with enforcement_helpers.asked_by_the_leases() as recording:
        yield recording


def _sent(service, index=-1):
    request = service.requests[index]
    return request['path'], json.loads(request['body'])


def test_a_refused_create_leaves_the_lease_in_error_holding_nothing(
        service, ctx):
    service.answer = (403, b'{"message": "No GPUs on Sundays"}')
    member = context.RequestContext(user_id='u1', project_id='p1',
                                    roles=['member'])
    with pytest.raises(exception.EnforcementDenied) as denied:
        lease(member, 2, at(1), at(2))
    assert denied.value.code == 403
    assert str(denied.value) == 'No GPUs on Sundays'
    [refused] = LEASES.list(ctx, project_id='p1')
    assert (refused['status'], refused['status_reason']) == (
        'ERROR', 'No GPUs on Sundays')
    assert refused['reservations'][0]['allocations'] == []
    assert usage(ctx)['promised'] == 0
    assert rows('lease_allocations') == []
    path, body = _sent(service)
    assert path == '/check-create'
    assert set(body) == {'context', 'lease'}
    assert body['context'] == {'user_id': 'u1', 'project_id': 'p1',
                               'auth_url': None, 'region_name': None}
    assert set(body['lease']) == {'id', 'name', 'start_date', 'end_date',
                                  'reservations'}
    assert body['lease']['start_date'] == at(1)
    [shown] = body['lease']['reservations']
    assert set(shown) == {'resource_type', 'amount', 'member_of',
                          'member_key', 'allocations'}
    assert [a['resource_provider_name'] for a in shown['allocations']] == [
        'dev1']
    assert set(shown['allocations'][0]) == {'id', 'resource_provider_name',
                                            'extra'}
    with pytest.raises(exception.LeaseConflict):
        LEASES.update(ctx, refused['id'], {'name': 'again'})


def test_a_refused_update_changes_nothing(service, ctx):
    made = lease(ctx, 2, at(1), at(2))
    service.answer = (403, b'{"message": "too long"}')
    with pytest.raises(exception.EnforcementDenied):
        LEASES.update(ctx, made['id'], {'end_date': at(5)})
    assert LEASES.get(ctx, made['id']) == made
    path, body = _sent(service)
    assert path == '/check-update'
    assert set(body) == {'context', 'current_lease', 'lease'}
    assert (body['current_lease']['end_date'], body['lease']['end_date']) == (
        at(2), at(5))


def test_on_end_is_told_after_the_end_and_cannot_undo_it(
        service, ctx, clock):  # noqa: F811
    early = lease(ctx, 1, 'now', at(2))
    due = lease(ctx, 1, 'now', at(1))
    service.answer = (500, b'broken')
    LEASES.delete(ctx, early['id'])
    clock.advance(3600)
    assert LEASES.end_due(ctx) == 1
    assert [LEASES.get(ctx, made['id'])['status']
            for made in (early, due)] == ['ENDED', 'ENDED']
    assert [_sent(service, i)[0] for i in (-2, -1)] == ['/on-end'] * 2
    assert usage(ctx)['used'] == 0


def test_exempted_projects_skip_every_filter(service, ctx):
    service.answer = (403, b'{"message": "no"}')
    QUOTAS.limits.set_project(ctx, 'p1', name='research')
    CONF.set_override('exempted_projects', ['research@Default'],
                      'enforcement')
    LEASES.reset()
    member = context.RequestContext(user_id='u1', project_id='p1',
                                    roles=['member'])
    try:
        assert lease(member, 1, at(1), at(2))['status'] == 'PENDING'
    finally:
        CONF.clear_override('exempted_projects', 'enforcement')
    assert service.requests == []


def test_strict_two_level_trees_share_the_root_limit_over_time(pool, ctx):
    with strict_two_level.root_over_a_and_b(pool, ctx):
        lease(ctx, 3, at(1), at(2), project='a')
        with pytest.raises(exception.OverQuota) as over:
            lease(ctx, 2, at(1), at(2), project='b')
        assert [(o['scope'], o['project_id']) for o in over.value.overs] == [
            ('tree', 'root')]
        assert lease(ctx, 2, at(2), at(3), project='b')['status'] == (
            'PENDING')
        tree = usage(ctx, 'b')['tree']
        assert (tree['promised'], tree['available']) == (3, 1)
        QUOTAS.reserve(ctx, 'b', {'FPGA': 1})
        with pytest.raises(exception.OverQuota):
            QUOTAS.reserve(ctx, 'b', {'FPGA': 1})


def test_a_device_promised_to_a_lease_cannot_be_deleted(pool, ctx):
    from cyquota.placement import providers
    made = lease(ctx, 2, at(1), at(2))
    with pytest.raises(device_errors.ResourceProviderInUse):
        providers.delete(ctx, pool.rp['dev1'])
    LEASES.delete(ctx, made['id'])
    providers.delete(ctx, pool.rp['dev1'])
    assert LEASES.get(ctx, made['id'])['reservations'][0][
        'allocations'] == []


def test_an_active_lease_is_no_drift(pool, ctx):
    lease(ctx, 2, 'now', at(1))
    QUOTAS.record_report(ctx, 'host-1', [])
    assert not QUOTAS.check_drift(ctx)
