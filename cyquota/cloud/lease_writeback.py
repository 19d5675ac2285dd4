"""Leases written back to the cloud's Placement (``[placement]
write_leases``, with ``source = placement``).

While a lease is active its devices are a Placement allocation of consumer
= the lease's id (its project and user, consumer type
``placement_client.LEASE_CONSUMER_TYPE``, classes through ``[placement]
class_map``), so that Nova's scheduler offers them to nobody else; when it
ends, that allocation is deleted.

It listens to the lease events of the process's LeaseEngine
(``cyquota.leases.events``: :func:`record` in the transaction of a change,
:func:`committed` after it), which ``cyquota.leases`` has it hear.

An outbox makes it crash-safe with any number of processes
(``lease_outbox``: a ``placement_lease_writes`` row per lease written):

* the transaction that starts, grows or ends the lease records what
  Placement should hold (:func:`record`: held or released, with a version
  that grows at each change), so no lease changes without its row;
* once that transaction has committed, the process that made the change
  applies it (:func:`committed`), outside any transaction: no database
  lock is held across an HTTP call. A failure leaves the row outstanding;
* every ``[conductor] lease_interval`` the conductor applies the
  outstanding rows (:func:`apply_outstanding`); a process takes a row for
  half an interval (``attempted_at``), so two conductors do not both
  write it;
* a call counts as applied only if the row's version is still the one it
  applied: a process whose call went out while the lease ended meanwhile
  notices and applies the new state again, so its late call is not the
  last word;
* an applied release is swept :data:`SETTLE` later: one more DELETE (a
  process that died between a late call and noticing it can have written
  the allocation again), and the row goes.

Placement refusing a start (its capacity taken meanwhile, a provider it no
longer has) leaves the lease ACTIVE: its ``status_reason`` names the
devices, a WARNING line is logged at each try, and the notification
``accelerator.lease.placement_refused`` and the count ``refused`` of
``cyquota_placement_lease_writes`` come once per change of the reason. A
later success clears the reason and is logged at INFO.
"""

import datetime
import re
import threading
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging

from cyquota.cloud import lease_outbox
from cyquota.cloud import placement_client
from cyquota.cloud import placement_errors as errors
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.lease_tables import calendar
from cyquota.leases import events
from cyquota import metrics
from cyquota import notifications
from cyquota import resource_classes

LOG = logging.getLogger(__name__)

#: How long an applied release waits for its last sweep: longer than a
#: late call to Placement can take to land.
SETTLE = datetime.timedelta(minutes=5)
#: The user Placement gives a consumer whose user is not known (its own
#: ``incomplete_consumer_user_id``), for a lease made without a user.
UNKNOWN_USER = '00000000-0000-0000-0000-000000000000'
_UUID = re.compile(
    r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', re.I)

# What one application of a row came to.
WRITTEN = 'written'
REMOVED = 'removed'
REFUSED = 'refused'
FAILED = 'failed'
#: Placement did not answer at all: the periodic run stops for this round.
AWAY = 'away'
#: A settled release's row gone after its last DELETE.
SWEPT = 'swept'

_LOCK = threading.Lock()
_client = None
#: Until when (``time.monotonic()``) this process leaves its new rows to
#: the conductor, Placement having not answered: one WARNING line, not one
#: per lease, and no request waits for a Placement that is away.
_away_until = 0


def enabled():
    """Whether leases are written back: ``source = placement`` and
    ``write_leases``."""
    return bool(CONF.placement.source == 'placement'
                and CONF.placement.write_leases)


def client():
    """The process's ``PlacementClient``, made from ``CONF`` on first use
    (its microversion negotiated once)."""
    global _client
    with _LOCK:
        if _client is None:
            _client = placement_client.PlacementClient(CONF)
        return _client


def reset():
    """Make the client anew from the configuration on next use."""
    global _client, _away_until
    with _LOCK:
        _client = None
        _away_until = 0


# -- pure parts --------------------------------------------------------------

def named_providers(detail, providers):
    """The ``(uuid, name)`` of the lease's devices that Placement's error
    ``detail`` names, in its order; all of them (by name) when it names
    none of them (it names the lease's own id too, as the consumer).

    :param providers: ``{uuid: name}`` of the lease's devices.
    """
    named = []
    for found in _UUID.findall(detail or ''):
        uuid = found.lower()
        if uuid in providers and (uuid, providers[uuid]) not in named:
            named.append((uuid, providers[uuid]))
    return named or sorted(providers.items(),
                           key=lambda item: (item[1], item[0]))


def refusal_reason(named, error):
    """The lease's ``status_reason`` when Placement refused its allocation
    with ``error`` (a ``PlacementHTTPError``) on the devices ``named``."""
    why = error.detail or '%d %s' % (error.status, error.code)
    return ('Placement refused the allocation on %s: %s' % (
        ', '.join('%s (%s)' % (name, uuid) for uuid, name in named),
        why))[:1024]


def is_refusal(error):
    """Whether ``error`` is Placement saying no to the allocation itself
    (not enough capacity: 409; a provider it does not have: 400), rather
    than failing to answer."""
    return (isinstance(error, errors.PlacementHTTPError)
            and not isinstance(error, errors.GenerationConflict)
            and error.status in (400, 409))


def record(conn, lease_id, change):
    """In the transaction that starts, grows or ends an active lease
    (``change``, a ``leases.events`` change): what Placement should hold
    for it, its devices (the new ones with the others, when it grew) or
    nothing. Writes nothing when write-back is off, nor for the end of a
    lease that was never written."""
    if enabled():
        if change == events.GROWN:
            lease_outbox.record_grown(conn, lease_id)
        elif change == events.STARTED:
            lease_outbox.record_held(conn, lease_id)
        else:
            lease_outbox.record_released(conn, lease_id)


# -- applying ----------------------------------------------------------------

def _lease_fields(lease):
    return {'id': lease.id, 'project_id': lease.project_id,
            'user_id': lease.user_id, 'status': lease.status,
            'start_date': calendar.isotime(lease.start_date),
            'end_date': calendar.isotime(lease.end_date)}


def _failed(lease_id, held, error):
    global _away_until
    metrics.LEASE_WRITES.labels(FAILED).inc()
    LOG.warning('Lease %s: its allocation not %s in Placement, tried again '
                'every %d s: %s', lease_id, 'written' if held else 'deleted',
                CONF.conductor.lease_interval, error)
    if isinstance(error, (errors.PlacementUnreachable,
                          errors.PlacementUnsupported)):
        _away_until = (time.monotonic()
                       + CONF.conductor.lease_interval / 2)
        return AWAY
    return FAILED


def _refused(context, job, error):
    named = named_providers(error.detail, job.providers)
    reason = refusal_reason(named, error)
    LOG.warning('Lease %s of project %s not held in Placement, tried again '
                'every %d s: %s', job.lease_id, job.lease.project_id,
                CONF.conductor.lease_interval, reason)
    current, before = lease_outbox.settle(context, job, refusal=reason)
    if current and before != reason:
        metrics.LEASE_WRITES.labels(REFUSED).inc()
        notifications.lease_placement_refused(
            context, _lease_fields(job.lease), reason, named)
    return REFUSED


def _call(placement, job):
    if job.held:
        placement.replace_allocations(
            job.lease_id, job.allocations, job.lease.project_id,
            job.lease.user_id or UNKNOWN_USER,
            placement_client.LEASE_CONSUMER_TYPE)
        return WRITTEN
    placement.delete_allocations(job.lease_id)
    return REMOVED


def _remove_late(placement, lease_id):
    """Delete what a late call can have written for an ended lease; None
    when done, else the outcome of the failure."""
    try:
        late = placement.delete_allocations(lease_id)
    except errors.PlacementError as error:
        return _failed(lease_id, False, error)
    if late:
        metrics.LEASE_WRITES.labels(REMOVED).inc()
        LOG.warning('Lease %s: a late allocation of the ended lease was '
                    'deleted from Placement', lease_id)
    return None


def _apply(context, placement, lease_id, where):
    """Apply the lease's row if it meets ``where``, and again as long as
    the lease changed while a call was out; the outcome, or None when
    there was nothing to apply."""
    classes = resource_classes.class_map(CONF)
    outcome = None
    while True:
        job = lease_outbox.take(context, lease_id, where, classes)
        if job is None:
            if outcome == WRITTEN:
                # The row went (the lease ended and settled) while this
                # write was out: the write must not be the last word.
                return _remove_late(placement, lease_id) or REMOVED
            return outcome
        try:
            outcome = _call(placement, job)
        except errors.PlacementError as error:
            if job.held and is_refusal(error):
                return _refused(context, job, error)
            return _failed(lease_id, job.held, error)
        metrics.LEASE_WRITES.labels(outcome).inc()
        current, refusal = lease_outbox.settle(context, job)
        if current:
            if refusal is not None:
                LOG.info('Lease %s of project %s now held in Placement, '
                         'which refused it before', lease_id,
                         job.lease.project_id)
            return outcome
        # The call may have landed after the new state's: apply that
        # again, whoever applied it already.
        where = ()


def committed(context, lease_id):
    """Apply what the transaction that just changed ``lease_id`` recorded,
    once it has committed. Never fails the lease's action: what
    is not applied now is left to the conductor's next run (so is all of
    it for half a lease interval after Placement did not answer)."""
    if (not enabled() or db_api.in_transaction(context)
            or time.monotonic() < _away_until):
        return
    try:
        _apply(context, client(), lease_id, lease_outbox.outstanding(
            models.utcnow(), CONF.conductor.lease_interval))
    except db_exc.DBError as error:
        LOG.warning('Lease %s: its Placement allocation left to the '
                    'conductor: %s', lease_id, errors.one_line(error))


def _sweep(context, placement, lease_id, where):
    job = lease_outbox.take(context, lease_id, where, None)
    if job is None:
        return None
    failed = _remove_late(placement, lease_id)
    if failed:
        return failed
    lease_outbox.forget(context, job)
    return SWEPT


def apply_outstanding(context, placement=None):
    """The conductor's periodic run: apply every row not applied yet (and
    not taken by another process within half a lease interval), then sweep
    the releases applied more than :data:`SETTLE` ago. A Placement that
    does not answer ends the run (one WARNING line); the next run tries
    again.

    :param placement: a ``PlacementClient`` (the process's when None).
    :returns: ``{outcome: count}`` of the rows handled.
    """
    if not enabled():
        return {}
    placement = placement or client()
    now = models.utcnow()
    outstanding = lease_outbox.outstanding(now, CONF.conductor.lease_interval)
    # A settled row was last taken when its release was applied; the same
    # condition on that time keeps two conductors from both sweeping it.
    settled = lease_outbox.settled(now, SETTLE) + outstanding[1:]
    counts = {}
    for where, run in ((outstanding, _apply), (settled, _sweep)):
        for lease_id in lease_outbox.lease_ids(context, where,
                                               CONF.quota.batch_size):
            outcome = run(context, placement, lease_id, where)
            if outcome is not None:
                counts[outcome] = counts.get(outcome, 0) + 1
            if outcome == AWAY:
                return counts
    return counts
