"""The example policy: a budget of accelerator-hours per project over a
rolling window, charged in advance and refunded for unused time."""

import collections
import datetime
import logging
import time

LOG = logging.getLogger(__name__)


class InvalidDocument(ValueError):
    """The request body is not a document cyquota would send."""


#: A lease as the policy prices it: its id (None when the caller sent none,
#: as Blazar on create) and name, dates in epoch seconds, the number of
#: accelerators (or hosts) over its reservations, its cost in hours.
LeaseCost = collections.namedtuple(
    'LeaseCost', ['lease_id', 'name', 'start', 'end', 'accelerators',
                  'hours'])

#: The answer to a check: ``allowed``, and the message of a refusal.
Decision = collections.namedtuple('Decision', ['allowed', 'message'])

ALLOWED = Decision(True, None)


def _timestamp(lease, field):
    value = lease.get(field)
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise InvalidDocument('lease.%s must be an ISO 8601 date, not %r'
                              % (field, value)) from None
    if parsed.tzinfo is None:
        # Blazar sends its naive dates, which are UTC.
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


def _count(reservation, index):
    """What one reservation is charged for: its ``amount``, or for a
    Blazar ``physical:host`` reservation its ``max`` hosts."""
    if not isinstance(reservation, dict):
        raise InvalidDocument('lease.reservations[%d] must be an object'
                              % index)
    field = 'amount'
    if 'amount' not in reservation and 'max' in reservation:
        field = 'max'
    value = reservation.get(field)
    if isinstance(value, str) and value.isdigit():
        # Blazar passes a host reservation's min and max as the user wrote
        # them.
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidDocument(
            'lease.reservations[%d] (%s) needs an amount, or for a '
            'physical:host reservation a max, that is a non-negative '
            'integer, not %r' % (index, reservation.get('resource_type'),
                                 value))
    return value


def project_of(context):
    """The ``project_id`` of a request's ``context`` document."""
    if not isinstance(context, dict) or not isinstance(
            context.get('project_id'), str):
        raise InvalidDocument('context.project_id must be a string')
    return context['project_id']


def price(lease):
    """The :class:`LeaseCost` of a ``lease`` document: the sum over its
    reservations of amount x duration in hours."""
    if not isinstance(lease, dict):
        raise InvalidDocument('a lease must be an object')
    lease_id, name = lease.get('id'), lease.get('name')
    if lease_id is not None and not isinstance(lease_id, str):
        raise InvalidDocument('lease.id must be a string or null')
    if name is not None and not isinstance(name, str):
        raise InvalidDocument('lease.name must be a string or null')
    start, end = _timestamp(lease, 'start_date'), _timestamp(lease, 'end_date')
    reservations = lease.get('reservations')
    if not isinstance(reservations, list):
        raise InvalidDocument('lease.reservations must be a list')
    accelerators = sum(_count(reservation, index)
                       for index, reservation in enumerate(reservations))
    hours = accelerators * max(0.0, end - start) / 3600
    return LeaseCost(lease_id or None, name or '', start, end, accelerators,
                     hours)


class AcceleratorHoursPolicy:
    """Decide check-create, check-update and on-end against the budget.

    :param store: a :class:`~cyquota.policy_example.store.ChargeStore`.
    :param budget_hours: accelerator-hours a project may be charged per
        window.
    :param window_seconds: length of the rolling window: the charges
        counted are those made in the last ``window_seconds``.
    :param clock: the current time in epoch seconds.
    """

    def __init__(self, store, budget_hours, window_seconds, clock=time.time):
        self.store = store
        self.budget = budget_hours
        self.window = window_seconds
        self.clock = clock

    def _window_text(self):
        return str(datetime.timedelta(seconds=self.window))

    def _refusal(self, project_id, cost, charged):
        left = max(0.0, self.budget - charged)
        return Decision(False, (
            "Lease '%s' would cost %.2f accelerator-hours, but project %s "
            "has only %.2f of its %g accelerator-hours left in the rolling "
            "window of %s." % (cost.name, cost.hours, project_id, left,
                               self.budget, self._window_text())))

    def check_create(self, context, lease):
        """Charge a new lease, or refuse it when over budget."""
        project_id, cost = project_of(context), price(lease)
        now = self.clock()
        with self.store.transaction() as cursor:
            charged = self.store.charged_since(cursor, project_id,
                                               now - self.window)
            if charged + cost.hours > self.budget:
                decision = self._refusal(project_id, cost, charged)
            else:
                self.store.add(cursor, project_id, cost.lease_id, cost.name,
                               now, cost.start, cost.end, cost.accelerators,
                               cost.hours)
                decision = ALLOWED
        LOG.info('check-create project %s lease %r: costs %.2f h, %.2f of '
                 '%g h charged in the window: %s', project_id, cost.name,
                 cost.hours, charged, self.budget,
                 'ALLOWED, charged' if decision.allowed else 'REFUSED')
        return decision

    def check_update(self, context, current_lease, lease):
        """Re-price a lease: its charge becomes the new cost, refused when
        that would exceed the budget and cost more than before."""
        project_id = project_of(context)
        current, cost = price(current_lease), price(lease)
        # Blazar's requested lease has a name only when it is renamed, and
        # no id: both are the current lease's then.
        cost = cost._replace(
            lease_id=cost.lease_id or current.lease_id,
            name=cost.name if lease.get('name') else current.name)
        now = self.clock()
        since = now - self.window
        with self.store.transaction() as cursor:
            charge = self.store.open_charge(cursor, project_id,
                                            cost.lease_id, current.name)
            charged = self.store.charged_since(cursor, project_id, since)
            previous = charge.hours if charge else 0.0
            # The lease's own charge is replaced, not added to.
            others = charged - (previous if charge and charge.charged_at
                                > since else 0.0)
            if cost.hours > previous and others + cost.hours > self.budget:
                decision = self._refusal(project_id, cost, others)
            elif charge:
                self.store.reprice(cursor, charge.id, cost.lease_id,
                                   cost.name, cost.start, cost.end,
                                   cost.accelerators, cost.hours)
                decision = ALLOWED
            else:
                # Charged before this service kept books: charge it now.
                self.store.add(cursor, project_id, cost.lease_id, cost.name,
                               now, cost.start, cost.end, cost.accelerators,
                               cost.hours)
                decision = ALLOWED
        LOG.info('check-update project %s lease %r: re-priced from %.2f h '
                 'to %.2f h, %.2f of %g h charged in the window by others: '
                 '%s', project_id, current.name, previous, cost.hours,
                 others, self.budget,
                 'ALLOWED' if decision.allowed else 'REFUSED')
        return decision

    def on_end(self, context, lease):
        """Refund the time a lease did not use: it is charged only up to
        now (or its end_date, if earlier)."""
        project_id, cost = project_of(context), price(lease)
        now = self.clock()
        with self.store.transaction() as cursor:
            charge = self.store.open_charge(cursor, project_id,
                                            cost.lease_id, cost.name)
            if charge is None:
                LOG.info('on-end project %s lease %r: no open charge, '
                         'nothing to refund', project_id, cost.name)
                return
            used = cost.accelerators * max(
                0.0, min(now, cost.end) - cost.start) / 3600
            hours = min(charge.hours, used)
            self.store.reprice(cursor, charge.id, cost.lease_id, cost.name,
                               cost.start, cost.end, cost.accelerators,
                               hours, ended=True)
        LOG.info('on-end project %s lease %r: used %.2f of %.2f h charged, '
                 '%.2f h refunded', project_id, cost.name, hours,
                 charge.hours, charge.hours - hours)

    def usage(self, project_id):
        """The project's budget and the charges in its current window."""
        now = self.clock()
        charges = self.store.charges(project_id, now - self.window)
        return {
            'project_id': project_id,
            'budget_hours': self.budget,
            'window_seconds': self.window,
            'charged_hours': sum(charge.hours for charge in charges),
            'leases': [{'id': charge.lease_id,
                        'name': charge.lease_name,
                        'hours': charge.hours,
                        'ended': bool(charge.ended),
                        'charged_at': datetime.datetime.fromtimestamp(
                            charge.charged_at,
                            datetime.timezone.utc).isoformat()}
                       for charge in charges],
        }
