"""Versioned notifications on the books: over the real RabbitMQ to a
listener on this test's own exchange and topic, and through
oslo.messaging's ``test`` driver."""

import datetime
import queue
import time

import kombu
import oslo_messaging
from oslo_messaging.notify import _impl_test
import pytest
import webtest

from cyquota.api import app
from cyquota.conf import CONF
from cyquota import exception
from cyquota import notifications
from cyquota import quota

SERVICE = {'X-Roles': 'service'}
ADMIN = {'X-Roles': 'admin'}
MEMBER = {'X-Roles': 'member', 'X-Project-Id': 'p3', 'X-User-Id': 'u3'}
_GROUP = 'oslo_messaging_notifications'


@pytest.fixture
def notify_with():
    """``notify_with(driver, topics)``: cyquota's notifier made anew with
    that driver; the defaults come back afterwards."""
    notifications.get_notifier()  # registers the notifier's options

    def configure(driver, topics=None):
        CONF.set_override('driver', [driver], _GROUP)
        if topics:
            CONF.set_override('topics', topics, _GROUP)
        notifications.reset()
    yield configure
    notifications.reset()
    for name in ('driver', 'topics'):
        CONF.clear_override(name, _GROUP)


class _Heard:
    """A notification listener's endpoint: what it heard, in order."""

    def __init__(self):
        self.messages = queue.Queue()
        self.contexts = []

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.contexts.append(ctxt)
        self.messages.put(('INFO', publisher_id, event_type, payload))

    def warn(self, ctxt, publisher_id, event_type, payload, metadata):
        self.messages.put(('WARN', publisher_id, event_type, payload))

    def next(self, timeout=30):
        return self.messages.get(timeout=timeout)


def _data(kind, payload):
    name, version = kind
    assert payload['cyquota_object.name'] == name
    assert payload['cyquota_object.version'] == version
    assert payload['cyquota_object.namespace'] == 'cyquota'
    return payload['cyquota_object.data']


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_the_books_events_reach_a_rabbitmq_listener(rabbit, backend,
                                                    notify_with, ctx):
    notify_with('messagingv2', [rabbit.name])
    heard = _Heard()
    listener = oslo_messaging.get_notification_listener(
        oslo_messaging.get_notification_transport(CONF),
        [oslo_messaging.Target(topic=rabbit.name, exchange=rabbit.name)],
        [heard], executor='threading')
    listener.start()
    try:
        _events_through_the_api(heard, ctx)
    finally:
        listener.stop()
        listener.wait()
        listener.transport.cleanup()
        with kombu.Connection('amqp://' + rabbit.url.split('://', 1)[1]) \
                as conn:
            for priority in ('info', 'warn'):
                conn.channel().queue_delete('%s.%s' % (rabbit.name, priority))


def _events_through_the_api(heard, ctx):
    api = webtest.TestApp(app.setup_app())
    publisher = 'cyquota:%s' % CONF.conductor.host
    api.put_json('/v1/registered_limits/FPGA', {'default_limit': 4},
                 headers=ADMIN)
    kept = api.post_json('/v1/reservations', {
        'project_id': 'p1', 'deltas': {'FPGA': 2}},
        headers=SERVICE).json['reservations']
    committed = api.post_json('/v1/reservations/commit', {
        'project_id': 'p1', 'reservations': kept},
        headers=dict(SERVICE, **{'X-Auth-Token': 'secret'}))
    priority, sender, event, payload = heard.next()
    # The request's context comes along, without its token.
    assert heard.contexts[0]['request_id'] == committed.headers[
        'X-Openstack-Request-Id']
    assert 'secret' not in str(heard.contexts[0])
    assert (priority, sender, event) == (
        'INFO', publisher, 'accelerator.quota.reservation.commit')
    assert _data(notifications.RESERVATION, payload) == {
        'project_id': 'p1', 'reservations': kept}

    dropped = api.post_json('/v1/reservations', {
        'project_id': 'p1', 'deltas': {'GPU': 1}},
        headers=SERVICE).json['reservations']
    api.post_json('/v1/reservations/rollback', {
        'project_id': 'p1', 'reservations': dropped}, headers=SERVICE)
    assert heard.next()[2] == 'accelerator.quota.reservation.rollback'

    api.post_json('/v1/reservations', {'project_id': 'p1',
                                       'deltas': {'FPGA': 3}},
                  headers=SERVICE, status=403)
    priority, _, event, payload = heard.next()
    assert (priority, event) == ('WARN', 'accelerator.quota.over_quota')
    data = _data(notifications.OVER_QUOTA, payload)
    assert (data['project_id'], data['action']) == ('p1', 'reserve')
    assert [(o['scope'], o['resource'], o['requested'])
            for o in data['overs']] == [('project', 'FPGA', 3)]

    quota.QUOTAS.reserve(ctx, 'p2', {'GPU': 1}, expire=1)
    time.sleep(1.1)
    assert quota.QUOTAS.expire(ctx) == 1
    _, _, event, payload = heard.next()
    assert event == 'accelerator.quota.reservation.expire'
    assert _data(notifications.EXPIRY, payload) == {'expired': 1}

    provider = api.post_json('/v1/resource_providers', {
        'name': 'fpga-node-1'}, headers=ADMIN).json['uuid']
    api.put_json('/v1/resource_providers/%s/inventories' % provider, {
        'resource_provider_generation': 0,
        'inventories': {'FPGA': {'total': 4}}}, headers=ADMIN)
    end = (datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0) + datetime.timedelta(days=1)).isoformat()
    lease = api.post_json('/v1/leases', {'lease': {
        'end_date': end, 'reservations': [
            {'resource_type': 'accelerator:FPGA', 'amount': 1}]}},
        headers=MEMBER).json['lease']
    api.delete('/v1/leases/%s' % lease['id'], headers=MEMBER)
    # Ended early: the end tells when it ended, as the lease shows it now.
    ended = api.get('/v1/leases/%s' % lease['id'],
                    headers=MEMBER).json['lease']['end_date']
    assert ended < end
    for action, status, end_date in (('start', 'ACTIVE', end),
                                     ('end', 'ENDED', ended)):
        _, _, event, payload = heard.next()
        assert event == 'accelerator.lease.%s' % action
        data = _data(notifications.LEASE, payload)
        assert (data['id'], data['project_id'], data['user_id'],
                data['status']) == (lease['id'], 'p3', 'u3', status)
        assert data['end_date'] == end_date
    with pytest.raises(queue.Empty):
        heard.next(timeout=0.5)


def test_nothing_is_sent_for_what_the_books_refused(sqlite_db, ctx,
                                                    notify_with):
    notify_with('test')
    _impl_test.reset()
    [uuid] = quota.QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    quota.QUOTAS.commit(ctx, 'p1', [uuid])
    quota.QUOTAS.commit(ctx, 'p1', [uuid])  # a retry: nothing new
    with pytest.raises(exception.ReservationConflict):
        quota.QUOTAS.rollback(ctx, 'p1', [uuid])
    with pytest.raises(exception.ReservationNotFound):
        quota.QUOTAS.commit(ctx, 'p2', [uuid])
    assert [message['event_type'] for _, message, _, _
            in _impl_test.NOTIFICATIONS] == [
        'accelerator.quota.reservation.commit']


def test_none_by_default(sqlite_db, ctx):
    notifications.reset()
    assert not notifications.enabled()
    _impl_test.reset()
    [uuid] = quota.QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    quota.QUOTAS.commit(ctx, 'p1', [uuid])
    assert _impl_test.NOTIFICATIONS == []
