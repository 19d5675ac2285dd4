"""What a lease's start, end or refusal tells the world: its counters
(``cyquota.metrics``) and its notifications, sent once the transaction
that made it has committed; and the lease events the listeners hear
(the cloud's write-back, ``cyquota.cloud.lease_writeback``).

A listener hears each change of what a lease holds twice:
``record(conn, lease_id, change)`` inside the transaction that makes it
(what must commit with the change, or not at all), and
``committed(context, lease_id)`` once that transaction has committed
(never failing the lease's action).
"""

from cyquota.lease_tables import calendar
from cyquota import metrics
from cyquota import notifications

#: The changes a listener records: the lease holds its devices from now
#: on, holds them and more (it grew), or holds nothing any more.
STARTED = 'started'
GROWN = 'grown'
ENDED = 'ended'

_listeners: list = []


def listen(listener):
    """Have ``listener`` hear every lease event from now on (once however
    many times it is given)."""
    if listener not in _listeners:
        _listeners.append(listener)


def record(conn, lease_id, change):
    """In the transaction that makes it: ``change`` (``STARTED``,
    ``GROWN`` or ``ENDED``, of an active lease) of lease ``lease_id``."""
    for listener in _listeners:
        listener.record(conn, lease_id, change)


def committed(context, lease_id):
    """A transaction that changed lease ``lease_id`` has committed."""
    for listener in _listeners:
        listener.committed(context, lease_id)


#: The fields of a lease that its start and end notifications carry.
FIELDS = ('id', 'project_id', 'user_id', 'status', 'start_date',
          'end_date')


def summary(row, status):
    """``FIELDS`` of a lease from its row, in ``status``."""
    return {'id': row.id, 'project_id': row.project_id,
            'user_id': row.user_id, 'status': status,
            'start_date': calendar.isotime(row.start_date),
            'end_date': calendar.isotime(row.end_date)}


def started_or_ended(context, action, lease):
    """Count and announce a lease's start or end (``action``); ``lease``:
    its ``FIELDS``."""
    metrics.LEASES.labels('started' if action == 'start' else 'ended').inc()
    notifications.lease_event(context, action, lease)


def refused(context, project_id, refused, action):
    """Count and announce a lease refused over quota."""
    metrics.count_over_quota(refused.overs)
    notifications.over_quota(context, project_id, refused.overs, action)
