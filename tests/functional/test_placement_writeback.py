"""Leases written back to a real Placement (``[placement] write_leases``,
``cyquota.cloud.lease_writeback``), on PostgreSQL and MariaDB, the mirror
synced first: a lease's devices are an allocation of the lease in
Placement while it is active, which Placement's own candidates then leave
out; a refused start stays ACTIVE, says why and is retried; a Placement
that is away is caught up with; a call that the lease's end overtook is
noticed and undone; two conductors converge on one write.

Time is the tests' clock (``tests.unit.test_engine.clock``): it moves
only when told, so a lease starts, a retry comes due and a release
settles when the test says.
"""

import datetime
import logging
import threading
import uuid

from keystoneauth1 import loading as ks_loading
from oslo_messaging.notify import _impl_test
import pytest
import sqlalchemy as sa

from cyquota.cloud import lease_writeback
from cyquota.cloud import mirror
from cyquota.cloud import placement_client
from cyquota.conductor import service
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import mirror_models
from cyquota import leases
from cyquota import metrics
from cyquota import notifications
from cyquota.placement import allocations
from cyquota.quota import QUOTAS
from servers import placement_server
from tests import fixtures
from tests.unit import test_engine

pytestmark = pytest.mark.timeout(300)

clock = test_engine.clock
LEASES = leases.LEASES
PROJECT = '5d1c4a8e0b7f4e2a9c3d6b8a1f0e2c4d'
USER = '9a8b7c6d5e4f43a2b1c0d9e8f7a6b5c4'
#: noauth2 makes the user of this token an admin; a token of its own, so
#: that no log line of the tests shows it by chance.
TOKEN = 'admin:cyquota-writeback-test'
HOUR = datetime.timedelta(hours=1)
_writes = mirror_models.LeaseWrite.__table__
_SETTINGS = dict(source='placement', write_leases=True,
                 class_map={'GPU': 'PGPU'}, auth_type='admin_token',
                 token=TOKEN, timeout=5)
_NOTIFY = 'oslo_messaging_notifications'
_LOGGER = 'cyquota.cloud.lease_writeback'


@pytest.fixture
def cloud(placement, backend, clock, ctx):
    """cyquota writing leases back to the fixture's Placement (emptied),
    notifications kept by oslo.messaging's ``test`` driver."""
    placement_server.empty(placement)
    # As keystoneauth does when it loads the plugin (parsed options cannot
    # be unregistered: they stay, unused once auth_type is cleared).
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='placement')
    for name, value in dict(_SETTINGS, endpoint=placement.url).items():
        CONF.set_override(name, value, 'placement')
    notifications.get_notifier()  # registers the notifier's options
    CONF.set_override('driver', ['test'], _NOTIFY)
    notifications.reset()
    _impl_test.reset()
    lease_writeback.reset()
    LEASES.reset()
    QUOTAS.limits.set_registered_limit(ctx, 'GPU', 8)
    yield placement
    lease_writeback.reset()
    notifications.reset()
    CONF.clear_override('driver', _NOTIFY)
    for name in list(_SETTINGS) + ['endpoint']:
        CONF.clear_override(name, 'placement')


@pytest.fixture
def gpus(cloud, ctx):
    """A compute node with two devices of 3 PGPU each, mirrored."""
    root = cloud.provider(name='wb-node')
    found = [cloud.provider(name='wb-gpu%d' % i, parent=root)
             for i in range(2)]
    for gpu in found:
        cloud.inventory(gpu, {'PGPU': 3})
    mirror.sync(ctx)
    return found


@pytest.fixture
def user():
    return cyquota_context.RequestContext(user_id=USER, project_id=PROJECT)


def _at(hours):
    return (test_engine.START + hours * HOUR).isoformat() + '+00:00'


def _lease(context, amount, start='now', end=2):
    return LEASES.create(context, PROJECT, {
        'start_date': start if start == 'now' else _at(start),
        'end_date': _at(end),
        'reservations': [{'resource_type': 'accelerator:GPU',
                          'amount': amount}]})


def _devices(lease):
    return {a['id'] for r in lease['reservations'] for a in r['allocations']}


def _held(cloud, lease_id):
    """What Placement holds for the lease: ``{provider: {class: n}}``."""
    found = cloud.call('GET', '/allocations/%s' % lease_id)
    return {rp: held['resources']
            for rp, held in found['allocations'].items()}


def _count(outcome):
    return metrics.LEASE_WRITES.labels(outcome)._value.get()


def _rows():
    with db_api.get_engine().connect() as conn:
        return [dict(row) for row in conn.execute(
            sa.select(_writes).order_by(_writes.c.lease_id)).mappings()]


def _next_round(clock):
    """Move the clock past the time a row stays taken by a try."""
    clock.now += datetime.timedelta(seconds=CONF.conductor.lease_interval)


def _records(caplog):
    """The write-back's own log records (other loggers, keystoneauth's and
    urllib3's, may be at DEBUG after earlier tests)."""
    return [r for r in caplog.records if r.name == _LOGGER]


def _sent(event_type):
    return [(priority, message['payload'])
            for _ctxt, message, priority, _retry in _impl_test.NOTIFICATIONS
            if message['event_type'] == event_type]


def test_a_lease_is_held_in_placement_until_deleted(cloud, gpus, user, ctx):
    assert placement_server.offered(cloud, 'PGPU:3') == set(gpus)
    written, removed = _count('written'), _count('removed')
    made = _lease(user, 3)
    assert made['status'] == 'ACTIVE' and made['status_reason'] is None
    (device,) = _devices(made)
    found = cloud.call('GET', '/allocations/%s' % made['id'])
    assert {rp: held['resources']
            for rp, held in found['allocations'].items()} == {
        device: {'PGPU': 3}}
    assert (found['project_id'], found['user_id'],
            found['consumer_type']) == (
        PROJECT, USER, placement_client.LEASE_CONSUMER_TYPE)
    assert _count('written') == written + 1
    # Nova's scheduler is offered the other device only.
    assert placement_server.offered(cloud, 'PGPU:3') == set(gpus) - {device}
    # The mirror knows the lease's allocation as the lease's own, not as
    # another consumer's usage on top of it.
    result = mirror.sync(ctx)
    assert dict(result.rows())['usage changes'] == 0
    assert allocations.get_for_provider(ctx, device)[1] == {
        made['id']: {'resources': {'GPU': 3}}}
    assert [(r['lease_id'], r['held'], r['applied']) for r in _rows()] == [
        (made['id'], True, True)]

    LEASES.delete(user, made['id'])
    assert _held(cloud, made['id']) == {}
    assert _count('removed') == removed + 1
    assert placement_server.offered(cloud, 'PGPU:3') == set(gpus)
    assert [(r['held'], r['version'], r['applied']) for r in _rows()] == [
        (False, 2, True)]


def test_a_grown_lease_is_held_in_placement_with_its_new_devices(
        cloud, gpus, user, ctx):
    made = _lease(user, 2)
    (first,) = _devices(made)
    (second,) = set(gpus) - {first}
    assert _held(cloud, made['id']) == {first: {'PGPU': 2}}
    written = _count('written')
    grown = LEASES.update(user, made['id'], {'reservations': [
        {'id': made['reservations'][0]['id'], 'amount': 4}]})
    # The kept device's allocation grows where it has room, and the new
    # one joins it, in one write of the lease's whole allocation.
    assert [(a['id'], a['amount']) for a in
            grown['reservations'][0]['allocations']] == [
        (first, 3), (second, 1)]
    assert _held(cloud, made['id']) == {first: {'PGPU': 3},
                                        second: {'PGPU': 1}}
    assert _count('written') == written + 1
    assert [(r['held'], r['version'], r['applied']) for r in _rows()] == [
        (True, 2, True)]
    assert placement_server.offered(cloud, 'PGPU:3') == set()
    assert placement_server.offered(cloud, 'PGPU:2') == {second}

    LEASES.delete(user, made['id'])
    assert _held(cloud, made['id']) == {}
    assert [(r['held'], r['version'], r['applied']) for r in _rows()] == [
        (False, 3, True)]
    assert placement_server.offered(cloud, 'PGPU:3') == set(gpus)


def _lease_task():
    """The conductor's periodic lease task, as it runs it."""
    (task,) = [task for task, _args, _kwargs
               in service._periodic_tasks('c1')
               if task.__name__ == 'start_and_end_leases']
    return task


def test_a_pending_lease_is_written_at_its_periodic_start(cloud, gpus, user,
                                                          ctx, clock):
    made = _lease(user, 2, start=1, end=2)
    assert made['status'] == 'PENDING'
    assert _held(cloud, made['id']) == {} and _rows() == []
    run = _lease_task()
    clock.now += HOUR
    run()
    assert LEASES.get(ctx, made['id'])['status'] == 'ACTIVE'
    (device,) = _devices(made)
    assert _held(cloud, made['id']) == {device: {'PGPU': 2}}
    assert placement_server.offered(cloud, 'PGPU:2') == set(gpus) - {device}
    assert lease_writeback.apply_outstanding(ctx) == {}
    clock.now += HOUR
    run()
    assert LEASES.get(ctx, made['id'])['status'] == 'ENDED'
    assert _held(cloud, made['id']) == {}
    assert placement_server.offered(cloud, 'PGPU:2') == set(gpus)
    # The release settles, gets its last sweep, and its row goes.
    assert lease_writeback.apply_outstanding(ctx) == {}
    clock.now += lease_writeback.SETTLE + datetime.timedelta(seconds=1)
    assert lease_writeback.apply_outstanding(ctx) == {'swept': 1}
    assert _rows() == []


def test_a_refused_start_stays_active_says_why_and_is_retried(
        cloud, gpus, user, ctx, clock, caplog):
    made = _lease(user, 2, start=1, end=3)
    (device,) = _devices(made)
    # Nova puts a server on the device before the lease starts.
    server = str(uuid.uuid4())
    cloud.allocate(server, {device: {'PGPU': 2}}, PROJECT, USER)
    refused, written = _count('refused'), _count('written')
    clock.now += HOUR
    with caplog.at_level(logging.INFO, logger=_LOGGER):
        assert LEASES.start_due(ctx) == 1
    lease = LEASES.get(ctx, made['id'])
    assert lease['status'] == 'ACTIVE'
    name = 'wb-gpu%d' % gpus.index(device)
    assert lease['status_reason'].startswith(
        'Placement refused the allocation on %s (%s): ' % (name, device))
    assert 'exceed the capacity' in lease['status_reason']
    assert _held(cloud, made['id']) == {}
    assert _count('refused') == refused + 1
    [(priority, payload)] = _sent('accelerator.lease.placement_refused')
    assert priority == 'WARN'
    data = payload['cyquota_object.data']
    assert payload['cyquota_object.name'] == 'LeasePlacementRefusalPayload'
    assert (data['id'], data['project_id'], data['user_id'],
            data['status'], data['status_reason']) == (
        made['id'], PROJECT, USER, 'ACTIVE', lease['status_reason'])
    assert data['resource_providers'] == [{'uuid': device, 'name': name}]
    warnings = [r for r in _records(caplog) if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert '\n' not in warnings[0].getMessage()
    assert lease['status_reason'] in warnings[0].getMessage()

    # Tried again each round: logged, not announced nor counted again.
    caplog.clear()
    _next_round(clock)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert lease_writeback.apply_outstanding(ctx) == {'refused': 1}
    assert len(_records(caplog)) == 1
    assert _count('refused') == refused + 1
    assert len(_sent('accelerator.lease.placement_refused')) == 1
    # Not taken again within the same round.
    assert lease_writeback.apply_outstanding(ctx) == {}

    cloud.call('DELETE', '/allocations/%s' % server)
    _next_round(clock)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=_LOGGER):
        assert lease_writeback.apply_outstanding(ctx) == {'written': 1}
    assert _held(cloud, made['id']) == {device: {'PGPU': 2}}
    assert LEASES.get(ctx, made['id'])['status_reason'] is None
    assert _count('written') == written + 1
    assert [r.getMessage() for r in _records(caplog)] == [
        'Lease %s of project %s now held in Placement, which refused it '
        'before' % (made['id'], PROJECT)]


def test_a_provider_placement_no_longer_has_is_named(cloud, gpus, user, ctx,
                                                     clock):
    made = _lease(user, 1, start=1, end=2)
    (device,) = _devices(made)
    cloud.call('DELETE', '/resource_providers/%s' % device)
    clock.now += HOUR
    LEASES.start_due(ctx)
    reason = LEASES.get(ctx, made['id'])['status_reason']
    assert reason.startswith('Placement refused the allocation on wb-gpu%d '
                             '(%s): ' % (gpus.index(device), device))
    assert 'does not exist' in reason


def test_placement_away_at_the_end_is_caught_up(cloud, gpus, user, ctx,
                                                clock, caplog):
    made = _lease(user, 3)
    (device,) = _devices(made)
    failed = _count('failed')
    with cloud.server.stopped():
        with caplog.at_level(logging.WARNING, logger=_LOGGER):
            LEASES.delete(user, made['id'])
        assert LEASES.get(ctx, made['id'])['status'] == 'ENDED'
        _next_round(clock)
        # Still away: one line for the whole round.
        with caplog.at_level(logging.WARNING, logger=_LOGGER):
            assert lease_writeback.apply_outstanding(ctx) == {'away': 1}
    assert _count('failed') == failed + 2
    messages = [r.getMessage() for r in _records(caplog)]
    assert len(messages) == 2
    assert all(m.startswith('Lease %s: its allocation not deleted in '
                            'Placement, tried again every ' % made['id'])
               and 'ConnectFailure' in m and '\n' not in m
               for m in messages)
    assert _held(cloud, made['id']) == {device: {'PGPU': 3}}
    _next_round(clock)
    assert lease_writeback.apply_outstanding(ctx) == {'removed': 1}
    assert _held(cloud, made['id']) == {}


class _Overtaken(placement_client.PlacementClient):
    """A conductor's client whose write of a lease goes out just after the
    lease ended (and its end was applied) elsewhere."""

    def __init__(self, end):
        super().__init__(CONF)
        self._end = end

    def replace_allocations(self, consumer, *args):
        self._end(consumer)
        return super().replace_allocations(consumer, *args)


def test_a_write_overtaken_by_the_end_is_undone(cloud, gpus, user, ctx,
                                                clock):
    made = _lease(user, 2)
    # As if the write's process died before it recorded it.
    with db_api.get_engine().begin() as conn:
        conn.execute(_writes.update().values(applied=False,
                                             attempted_at=None))
    removed = _count('removed')
    late = _Overtaken(lambda lease_id: LEASES.delete(user, lease_id))
    assert lease_writeback.apply_outstanding(ctx, late) == {'removed': 1}
    assert LEASES.get(ctx, made['id'])['status'] == 'ENDED'
    # The late write landed after the end's DELETE, and was deleted again.
    assert _held(cloud, made['id']) == {}
    assert _count('removed') == removed + 2
    assert [(r['held'], r['version'], r['applied']) for r in _rows()] == [
        (False, 2, True)]


def test_two_conductors_converge(cloud, gpus, user, ctx, clock):
    with cloud.server.stopped():
        made = [_lease(user, 1) for _ in range(4)]
    assert all(not r['applied'] for r in _rows())
    written = _count('written')
    done = []

    def conductor(barrier):
        own = placement_client.PlacementClient(CONF)
        context = cyquota_context.get_admin_context()
        barrier.wait()
        done.append(lease_writeback.apply_outstanding(context, own))
    # The test's Placement keeps its books in SQLite, which may answer a
    # write that meets another with a 500: that lease waits for the next
    # round.
    for _round in range(3):
        _next_round(clock)
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=conductor, args=(barrier,))
                   for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if all(r['applied'] for r in _rows()):
            break
    assert all(r['applied'] for r in _rows())
    # Each lease written once, by one of them.
    assert sum(counts.get('written', 0) for counts in done) == 4
    assert _count('written') == written + 4
    for lease in made:
        (device,) = _devices(lease)
        assert _held(cloud, lease['id']) == {device: {'PGPU': 1}}


def test_nothing_is_written_when_write_back_is_off(cloud, gpus, user, ctx):
    CONF.set_override('write_leases', False, 'placement')
    with fixtures.statements_sent() as statements:
        made = _lease(user, 1)
        LEASES.delete(user, made['id'])
    assert _held(cloud, made['id']) == {}
    assert _rows() == []
    assert not [s for s in statements if 'placement_lease_writes' in s]
