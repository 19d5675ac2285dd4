"""LeaseEngine: create, read, update and end leases.

Every method takes a request context first. Lease views are dicts shaped
as the REST API answers them::

    {"id", "name", "project_id", "user_id", "start_date", "end_date",
     "status", "status_reason", "created_at", "updated_at",
     "reservations": [{"id", "resource_type", "amount", "member_of",
                       "member_key", "allocations": [
                           {"id", "resource_provider_name", "amount"}]}]}

with dates as ISO 8601 strings with their UTC offset.

A create or update runs in three steps: the request is checked and
devices are chosen for the window without locks (the filters are shown
them); the usage-enforcement filters run, outside any transaction; then
one transaction locks, in the ledger's order, the lease's row (an update)
or the project's lease row (a create, which counts the project's leases
under it: ``[leases] max_leases_per_project``), the project's quota rows
(``QUOTAS.lease_holdings``) and the chosen providers
(``devices``), checks the window against quota and device capacity
(reading the calendar's overlapping windows of both in one query,
``overlaps.Overlaps``), and writes (``records``, the lease records' one
writer). Start and end (periodic, or DELETE) lock the lease's row first,
so each happens exactly once; the listeners of lease events hear each
change of what a lease holds in its transaction and once it has
committed (``events``)."""

from oslo_log import log as logging

from cyquota.budgets import lease_charges
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import write_batch
from cyquota import enforcement
from cyquota import exception
from cyquota.leases import devices
from cyquota.leases import document
from cyquota.leases import events
from cyquota.lease_tables import overlaps as overlaps_mod
from cyquota.lease_tables import records
from cyquota.leases import request as request_mod
from cyquota.leases import store
from cyquota.leases import update as lease_update
from cyquota.placement import pools
from cyquota import quota
from cyquota.quota import validation

LOG = logging.getLogger(__name__)

_FINAL = (lease_models.ENDED, lease_models.ERROR)


class LeaseEngine:
    """The leases of every project."""

    def __init__(self):
        self._chain = None

    @property
    def chain(self):
        """The usage-enforcement filter chain, loaded on first use."""
        if self._chain is None:
            self._chain = enforcement.load_chain(
                project_names=quota.QUOTAS.limits.project_names)
        return self._chain

    def reset(self):
        """Load the filter chain from the configuration on next use."""
        self._chain = None

    def _payload(self, conn, request, lease_id=None, carrier=None):
        """The filters' lease document (``document.of``), None when no
        filter reads it."""
        if not self.chain.filters:
            return None
        return document.of(conn, request, lease_id, carrier)

    # -- create ------------------------------------------------------------

    def create(self, context, project_id, lease):
        """Create a lease for ``project_id`` from ``lease`` (the object
        under ``"lease"`` in a create body: ``end_date``, ``reservations``
        and optionally ``name`` and ``start_date``); returns its view
        (ACTIVE when it starts now, else PENDING).

        :raises InvalidLease: (400) a bad value, naming the field.
        :raises LeaseLimitExceeded: (403) the project holds ``[leases]
            max_leases_per_project`` leases already; nothing is stored.
        :raises EnforcementDenied: (403) a filter refused it; the lease is
            stored in ERROR with the filter's message as status_reason (an
            EnforcementUnavailable, undecided, stores nothing).
        :raises OverQuota: (403) the window does not fit the quota.
        :raises NoValidAllocation: (409) no devices for the window.
        """
        validation.project_id(project_id)
        now = models.utcnow()
        request = request_mod.parse_create(lease, now)
        lease_id = store.new_id()
        request.name = request.name or lease_id
        for r in request.reservations:
            r.id = store.new_id()
        document = None
        if self.chain.filters:  # Else no document: nothing to read.
            with db_api.reader(context) as session:
                conn = session.connection()
                # A project at its bound asks no policy service.
                store.check_room(conn, project_id, now)
                document = self._payload(
                    conn, request,
                    carrier=pools.Carrier.of(context, project_id))
        try:
            self.chain.check_create(context, document, lease_id=lease_id,
                                    project_id=project_id)
        except exception.EnforcementUnavailable:
            raise  # Nothing refused the lease: there is none to list.
        except exception.EnforcementDenied as denied:
            self._store_refused(context, lease_id, project_id, request,
                                denied.message)
            raise
        try:
            view = self._create(context, lease_id, project_id, request)
        except exception.OverQuota as refused:
            events.refused(context, project_id, refused, 'lease.create')
            raise
        events.committed(context, lease_id)
        if view['status'] == lease_models.ACTIVE:
            events.started_or_ended(
                context, 'start',
                {field: view[field] for field in events.FIELDS})
        return view

    @db_api.retry_on_conflict
    def _store_refused(self, context, lease_id, project_id, request, reason):
        with db_api.writer_connection(context) as conn:
            # ERROR leases count too: a project at its bound stores none.
            store.lock_room(conn, project_id, models.utcnow(), live=False)
            batch = write_batch.WriteBatch(conn)
            records.insert(batch, lease_id, project_id, context.user_id,
                           request, lease_models.ERROR,
                           {r.resource: project_id
                            for r in request.reservations},
                           status_reason=reason[:1024])
            batch.send()
        LOG.info('Lease %s of project %s refused: %s', lease_id, project_id,
                 reason)

    @db_api.retry_on_conflict
    def _create(self, context, lease_id, project_id, request):
        now = models.utcnow()
        starts = request.start <= now
        status = lease_models.ACTIVE if starts else lease_models.PENDING
        amounts = request.amounts()
        with db_api.writer_connection(context) as conn:
            store.lock_room(conn, project_id, now)
            holdings = quota.QUOTAS.lease_holdings(
                context, conn, project_id, list(amounts))
            # The quota's windows are read with the devices'.
            overlaps = overlaps_mod.Overlaps(conn)
            holdings.ask_windows(overlaps, amounts, max(request.start, now),
                                 request.end)
            # Devices first (unlocked): no room is a 409 before a 403.
            choice = devices.choose(conn, request.device_needs(),
                                    request.start, request.end,
                                    pools.Carrier.of(context, project_id),
                                    overlaps=overlaps)
            overs = holdings.window_overs()
            if overs:
                raise exception.OverQuota(overs=overs)
            holdings.spend(lease_id, None, lease_charges.Plan(
                amounts, request.start, request.end), context.user_id,
                lease_charges.ACCEPTED, now)
            # The writes go as one statement where the server takes it.
            batch = write_batch.WriteBatch(conn)
            devices.take(batch, choice)
            row = records.insert(
                batch, lease_id, project_id, context.user_id, request, status,
                {r: holdings.root_id(r) for r in amounts}, choice.parts)
            if starts:
                # The providers taken before the start locks them.
                batch.send()
                self._start_holding(conn, holdings, lease_id, project_id,
                                    context.user_id, request, choice.parts)
            else:
                holdings.promise(amounts, request.start, request.end)
            holdings.write(batch)
            batch.send()
            # As stored: nothing of it is read back.
            view = store.created_view(row, request, choice)
        LOG.info('Lease %s of project %s created: %s', lease_id, project_id,
                 status)
        return view

    @staticmethod
    def _start_holding(conn, holdings, lease_id, project_id, user_id,
                       request, held=None):
        for resource, amount in sorted(request.amounts().items()):
            holdings.start(resource, amount, lease_id)
        devices.activate(conn, lease_id, project_id, user_id, held)
        events.record(conn, lease_id, events.STARTED)

    # -- reads -------------------------------------------------------------

    def get(self, context, lease_id):
        """The view of a lease; LeaseNotFound (404) if none."""
        with db_api.reader(context) as session:
            conn = session.connection()
            return store.view(conn, store.read(conn, lease_id))

    def list(self, context, project_id=None, status=None, limit=None,
             marker=None):
        """Views of leases (one project's, or all), newest first, at most
        ``limit`` (all: None) after the lease ``marker`` (InvalidQuery, 400,
        if the project has none such)."""
        if project_id is not None:
            validation.project_id(project_id)
        with db_api.reader(context) as session:
            conn = session.connection()
            return store.views(conn, store.rows(conn, project_id, status,
                                                limit, marker))

    # -- update ------------------------------------------------------------

    def update(self, context, lease_id, changes):
        """Change ``name``, ``end_date``, ``start_date`` (while PENDING)
        and ``amount`` of reservations matched by ``id`` (an ACTIVE
        lease's may only grow: it keeps its devices and takes more for the
        rest of its window); returns the new view. A change of the window
        or an amount carries the member keys as the caller may carry them
        now (``leases.update``). A refusal (InvalidLease,
        EnforcementDenied, OverQuota, NoValidAllocation) changes nothing;
        LeaseConflict (409) for an ENDED or ERROR lease, or a smaller
        amount of an ACTIVE one."""
        now = models.utcnow()
        with db_api.reader(context) as session:
            conn = session.connection()
            row = store.read(conn, lease_id)
            if row.status in _FINAL:
                raise exception.LeaseConflict(action='change',
                                              lease_id=lease_id,
                                              status=row.status)
            active = row.status == lease_models.ACTIVE
            if request_mod.repeats_fixed(changes):
                request_mod.check_fixed(changes, store.view(conn, row))
            current = store.request_of(conn, row)
            request = request_mod.parse_update(lease_id, changes, current,
                                               active, now)
            carrier = pools.Carrier.of(context, row.project_id)
            before = self._payload(conn, current, lease_id=lease_id)
            after = None
            if self.chain.filters:  # Else no document: nothing to read.
                after = document.of(conn, request, chosen=(
                    lease_update.devices_after(conn, row, current, request,
                                               carrier, now)))
        self.chain.check_update(context, before, after, lease_id=lease_id,
                                project_id=row.project_id)
        try:
            grown = lease_update.apply(context, lease_id, row.updated_at,
                                       current, request, carrier)
        except exception.OverQuota as refused:
            events.refused(context, row.project_id, refused,
                           'lease.update')
            raise
        if grown:
            events.committed(context, lease_id)
        return self.get(context, lease_id)

    # -- start and end -----------------------------------------------------

    def delete(self, context, lease_id):
        """End a PENDING or ACTIVE lease now; it stays readable as ENDED,
        an ACTIVE one's ``end_date`` now and its ``status_reason`` naming
        the scheduled end, a PENDING one's dates kept and its reason
        saying it was cancelled (``store.ending``). LeaseConflict (409)
        for an ENDED or ERROR one."""
        document, row = self._end(context, lease_id)
        events.committed(context, lease_id)
        events.started_or_ended(context, 'end',
                                events.summary(row, lease_models.ENDED))
        self.chain.on_end(context, document, lease_id=lease_id,
                          project_id=row.project_id)

    def start_due(self, context):
        """Start every PENDING lease whose start has come; returns how
        many. Exactly once with several conductors."""
        started = 0
        for lease_id in self._due(context, lease_models.PENDING,
                                  'start_date'):
            row = self._start(context, lease_id)
            if row is not None:
                started += 1
                events.committed(context, lease_id)
                events.started_or_ended(
                    context, 'start', events.summary(row, lease_models.ACTIVE))
        return started

    def end_due(self, context):
        """End every ACTIVE lease whose end has come; returns how many.
        Exactly once with several conductors."""
        ended = 0
        for lease_id in self._due(context, lease_models.ACTIVE, 'end_date'):
            ended_now = self._end(context, lease_id, due=True)
            if ended_now is not None:
                document, row = ended_now
                ended += 1
                events.committed(context, lease_id)
                events.started_or_ended(
                    context, 'end', events.summary(row, lease_models.ENDED))
                # The filters' context at the periodic end: the lease's,
                # not made the thread's: the periodic work's later log
                # lines would carry this lease's user and project.
                self.chain.on_end(
                    cyquota_context.RequestContext(
                        user_id=row.user_id, project_id=row.project_id,
                        overwrite=False),
                    document, lease_id=lease_id)
        return ended

    @staticmethod
    def _due(context, status, column):
        """The ids of leases in ``status`` whose ``column`` date has come,
        a batch at a time; a lease handled leaves ``status``, so the next
        batch starts after it."""
        now = models.utcnow()
        while True:
            with db_api.reader(context) as session:
                ids = store.due(session.connection(), status, column, now,
                                CONF.quota.batch_size)
            yield from ids
            if len(ids) < CONF.quota.batch_size:
                return

    @db_api.retry_on_conflict
    def _start(self, context, lease_id):
        now = models.utcnow()
        with db_api.writer_connection(context) as conn:
            row = store.lock(conn, lease_id)
            if row.status != lease_models.PENDING or row.start_date > now:
                return None
            request = store.request_of(conn, row)
            amounts = request.amounts()
            holdings = quota.QUOTAS.lease_holdings(
                context, conn, row.project_id, list(amounts))
            self._start_holding(conn, holdings, lease_id, row.project_id,
                                row.user_id, request)
            records.start(conn, lease_id)
            holdings.release(amounts, row.start_date, row.end_date, now)
            holdings.write()
        LOG.info('Lease %s of project %s started', lease_id, row.project_id)
        return row

    @db_api.retry_on_conflict
    def _end(self, context, lease_id, due=False):
        """End the lease now; returns its filters' document and its row as
        ended (``store.ending``: a DELETE cuts an ACTIVE lease's window).
        ``due``: the periodic end, of an ACTIVE lease whose end has come,
        else None; otherwise an ENDED or ERROR lease is a
        LeaseConflict."""
        now = models.utcnow()
        with db_api.writer_connection(context) as conn:
            row = store.lock(conn, lease_id)
            if due and (row.status != lease_models.ACTIVE
                        or row.end_date > now):
                return None
            if row.status in _FINAL:
                raise exception.LeaseConflict(action='end', lease_id=lease_id,
                                              status=row.status)
            store.release_room(conn, row.project_id)
            request = store.request_of(conn, row)
            end_date, reason = store.ending(row, now, deleted=not due)
            request.end = end_date  # The filters are told the real end.
            document = self._payload(conn, request, lease_id=lease_id)
            amounts = request.amounts()
            holdings = quota.QUOTAS.lease_holdings(
                context, conn, row.project_id, list(amounts))
            if not due:  # What it will not hold now is refunded.
                holdings.spend(
                    lease_id,
                    lease_charges.Plan(amounts, row.start_date, row.end_date),
                    lease_charges.Plan(amounts, row.start_date, end_date)
                    if row.status == lease_models.ACTIVE else None,
                    context.user_id, lease_charges.ENDED, now)
            if row.status == lease_models.ACTIVE:
                for resource, amount in sorted(amounts.items()):
                    holdings.end(resource, amount, lease_id)
                events.record(conn, lease_id, events.ENDED)
            devices.release(context, lease_id)
            ended = records.end(conn, row, end_date, reason)
            if row.status == lease_models.PENDING:
                holdings.release(list(amounts), row.start_date,
                                 row.end_date, now)
            holdings.write()
        LOG.info('Lease %s of project %s ended%s', lease_id, row.project_id,
                 '' if reason == row.status_reason else ': ' + reason)
        return document, ended
