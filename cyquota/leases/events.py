"""What a lease's start, end or refusal tells the world: its counters
(``cyquota.metrics``) and its notifications, sent once the transaction
that made it has committed."""

from cyquota import calendar
from cyquota import metrics
from cyquota import notifications

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
