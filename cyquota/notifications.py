"""Versioned notifications on the books (oslo.messaging's notifier), in
the shape Nova and Cyborg send them (doc/source/notifications.rst).

Every event is sent after the transaction that made it has committed,
never from inside one, so a listener never hears of a change the books
do not hold. ``[oslo_messaging_notifications] driver`` picks the way out:
none (the default: nothing is built or sent), ``messagingv2`` (RabbitMQ,
on ``[oslo_messaging_notifications] topics``, default ``notifications``),
``log`` (the service's log) or ``test``. The notifier logs a failed send
and never fails the request.

A payload is ``{"cyquota_object.name", "cyquota_object.namespace":
"cyquota", "cyquota_object.version", "cyquota_object.data"}``; a payload
version's minor number grows when fields are added, its major number when
one changes meaning or goes away.
"""

import threading

import oslo_messaging

from cyquota.conf import CONF

#: ``(name, version)`` of each payload.
RESERVATION = ('ReservationPayload', '1.0')
EXPIRY = ('ReservationExpiryPayload', '1.0')
OVER_QUOTA = ('OverQuotaPayload', '1.1')
LEASE = ('LeasePayload', '1.0')
LEASE_REFUSED = ('LeasePlacementRefusalPayload', '1.0')
BUDGET_EXHAUSTED = ('BudgetExhaustedPayload', '1.0')

_LOCK = threading.Lock()
_notifier = None


class _ContextSerializer(oslo_messaging.NoOpSerializer):
    """The request context travels as its dict (the notifier has taken
    the token out); payloads are JSON already."""

    def serialize_context(self, ctxt):
        return ctxt.to_dict()


def get_notifier():
    """The process's notifier, made from the configuration once."""
    global _notifier
    with _LOCK:
        if _notifier is None:
            transport = oslo_messaging.get_notification_transport(CONF)
            _notifier = oslo_messaging.Notifier(
                transport, publisher_id='cyquota:%s' % CONF.conductor.host,
                serializer=_ContextSerializer())
        return _notifier


def reset():
    """Forget the notifier, so the next use reads the configuration
    again."""
    global _notifier
    with _LOCK:
        notifier, _notifier = _notifier, None
    if notifier is not None:
        notifier.transport.cleanup()


def payload(kind, data):
    """The versioned payload of ``kind`` (``(name, version)``)."""
    name, version = kind
    return {'cyquota_object.name': name,
            'cyquota_object.namespace': 'cyquota',
            'cyquota_object.version': version,
            'cyquota_object.data': data}


def enabled():
    """Whether a driver other than ``noop`` is configured (the notifier's
    own ``is_enabled`` is true with no driver at all)."""
    get_notifier()  # registers [oslo_messaging_notifications]
    return bool(set(CONF.oslo_messaging_notifications.driver) - {'noop'})


def _send(context, event_type, kind, data, priority='info'):
    if enabled():
        getattr(get_notifier(), priority)(context, event_type,
                                          payload(kind, data))


def reservations_ended(context, action, project_id, uuids):
    """``accelerator.quota.reservation.commit`` or ``.rollback``:
    ``uuids`` of ``project_id`` committed or rolled back."""
    if uuids:
        _send(context, 'accelerator.quota.reservation.%s' % action,
              RESERVATION, {'project_id': project_id,
                            'reservations': list(uuids)})


def reservations_expired(context, count):
    """``accelerator.quota.reservation.expire``: a sweep expired
    ``count`` reservations."""
    if count:
        _send(context, 'accelerator.quota.reservation.expire', EXPIRY,
              {'expired': count})


def over_quota(context, project_id, overs, action, consumer_id=None,
               request_id=None):
    """``accelerator.quota.over_quota`` (priority WARN): ``action``
    (``reserve``, ``lease.create``, ``lease.update``) of ``project_id``
    refused; ``overs`` as the error carries them; a reserve's
    ``consumer_id`` and ``request_id`` (null when not given; since 1.1)."""
    _send(context, 'accelerator.quota.over_quota', OVER_QUOTA,
          {'project_id': project_id, 'action': action,
           'consumer_id': consumer_id, 'request_id': request_id,
           'overs': [dict(over) for over in overs]}, priority='warn')


def lease_event(context, action, lease):
    """``accelerator.lease.start`` or ``.end``: ``lease`` is ``{id,
    project_id, user_id, start_date, end_date, status}`` after the
    event."""
    _send(context, 'accelerator.lease.%s' % action, LEASE, dict(lease))


def lease_placement_refused(context, lease, reason, providers):
    """``accelerator.lease.placement_refused`` (priority WARN): the cloud's
    Placement refused the allocation of an active lease (``lease``: ``{id,
    project_id, user_id, start_date, end_date, status}``); ``reason`` is
    the lease's new ``status_reason``, ``providers`` the ``(uuid, name)``
    of the devices it names."""
    _send(context, 'accelerator.lease.placement_refused', LEASE_REFUSED,
          dict(lease, status_reason=reason, resource_providers=[
              {'uuid': uuid, 'name': name} for uuid, name in providers]),
          priority='warn')


def budget_exhausted(context, project_id, resource, period_start,
                     period_end, balance_hours):
    """``accelerator.budget.exhausted`` (priority WARN): the budget of
    ``resource`` of ``project_id`` has ``balance_hours`` (at or below
    zero) left in the period ``[period_start, period_end)`` (naive UTC);
    sent once per budget and period."""
    _send(context, 'accelerator.budget.exhausted', BUDGET_EXHAUSTED,
          {'project_id': project_id, 'resource': resource,
           'period_start': period_start.isoformat() + 'Z',
           'period_end': period_end.isoformat() + 'Z',
           'balance_hours': balance_hours}, priority='warn')
