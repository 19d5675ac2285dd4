"""QuotaEngine: the public face of the quota ledger.

The REST API, the RPC conductor and the commands call the engine and
nothing behind it. It validates caller input (so bad input never reaches
the database) and hands the work to the ledger's pieces itself
(``cyquota.quota.ledger``: ``reserve``, ``settle``, ``release``, ``reads``,
``upkeep``, ``lease_holdings``, whose package docstring holds the lock
order), set up for the configured enforcement model and the device hook
the service's start-up gives (``use_devices``); limits
are read and written through ``limits`` (a ``facade.Limits``), and repair
runs through ``check_drift`` and ``repair`` (``usage_counts`` and
``consumer_projects`` give the ledger's side to the cloud's Placement as
a witness). Every method takes a request context first, as in Nova and
Cyborg.
"""

import typing

from cyquota import exception
from cyquota import metrics
from cyquota import notifications
from cyquota.quota import attachments
from cyquota.quota.ledger import lease_holdings
from cyquota.quota.ledger import reads
from cyquota.quota.ledger import release
from cyquota.quota.ledger import reserve
from cyquota.quota.ledger import settle
from cyquota.quota.ledger import upkeep
from cyquota.quota import limits as quota_limits
from cyquota.quota.limits import facade
from cyquota.quota import refusals
from cyquota.quota import repair
from cyquota.quota import resources as quota_resources
from cyquota.quota import validation


class Ledger(typing.NamedTuple):
    """The ledger's pieces, set up for one enforcement model and device
    hook: each keeps ``quota_usages`` and ``reservations`` right for its
    part of the work."""

    model: typing.Any
    reserve: reserve.Reserve
    settle: settle.Settle
    release: release.Release
    reads: reads.Reads
    upkeep: upkeep.Upkeep


class QuotaEngine:
    """Reserve, commit, roll back, release and expire accelerator quota.

    The ledger (and with it the limit source and the enforcement model) is
    built from the configuration on first use, so the engine can be
    imported before the configuration is parsed. The device hook is given
    once, at start-up (``cyquota.service``), through :meth:`use_devices`.
    """

    def __init__(self):
        self._ledger = self._limits = self._devices = None

    def use_devices(self, devices):
        """Claim and free the devices of reservations that name them
        through ``devices``: ``parse(params)``, ``claim(context,
        consumer_id, project_id, request, user_id)`` (joins the caller's
        transaction), ``free(context, consumer_id)``, ``holds(context,
        consumer_id)``, ``allocations(context, consumer_id)``, and
        ``in_statement(request)`` with ``steps`` to claim the common
        request inside the ledger's one statement."""
        self._devices = devices
        self._ledger = None

    def _build(self):
        if self._devices is None:
            raise RuntimeError('the quota ledger has no device hook: '
                               'cyquota.service gives it at start-up')
        source = quota_limits.load_source()
        model = quota_limits.load_model(source)
        self._limits = facade.Limits(source, model)
        self._ledger = Ledger(
            model, reserve.Reserve(model, self._devices),
            settle.Settle(model, self._devices),
            release.Release(model, self._devices), reads.Reads(model),
            upkeep.Upkeep(model))

    @property
    def ledger(self):
        """The :class:`Ledger` the engine hands its work to."""
        if self._ledger is None:
            self._build()
        return self._ledger

    @property
    def limits(self):
        """The limits (``facade.Limits``): reads through the limit source,
        writes judged by the enforcement model."""
        if self._limits is None:
            self._build()
        return self._limits

    @property
    def devices(self):
        """The device hook given by :meth:`use_devices`."""
        if self._devices is None:
            self._build()
        return self._devices

    def reset(self):
        """Rebuild the ledger and the limits from the configuration on next
        use (the device hook stays)."""
        self._ledger = self._limits = None

    @property
    def resources(self):
        """The counted resource classes."""
        return quota_resources.known_resources()

    def reserve(self, context, project_id, deltas, expire=None,
                request_id=None, consumer_id=None, dry_run=False,
                devices=None):
        """Reserve ``deltas`` ({resource: non-zero int}) for a project.

        Positive deltas are checked against limits and added to
        ``reserved``, all resources or none (OverQuota names every one that
        does not fit). ``expire``: seconds, an aware datetime or an ISO 8601
        string; None takes ``[quota] reservation_expire``. The same
        ``request_id`` again returns the same uuids. Returns the
        reservation uuids; a ``dry_run`` checks and returns ``[]``.

        A refusal over quota for a ``consumer_id`` (not a dry run) is
        recorded (``list_refusals``) and notified; one by a budget
        (BudgetExhausted) is recorded too.

        ``devices``: Placement-style request parameters (``{"resources":
        "FPGA:2", "member_of": "in:<agg>,<agg>", ...}``) whose totals equal
        the positive deltas: devices are chosen by those rules and allocated
        to ``consumer_id`` (required then) in the same transaction;
        ``get_device_allocations`` shows them. Rollback and expiry free
        them, and so does the release that leaves the consumer holding
        nothing.
        """
        validation.project_id(project_id)
        deltas = validation.deltas(deltas)
        expire = validation.expire(expire)
        validation.optional_id('request_id', request_id)
        validation.optional_id('consumer_id', consumer_id)
        if devices is not None:
            if consumer_id is None:
                raise exception.Invalid(
                    reason='consumer_id is required when devices are named: '
                           'the devices are allocated to it')
            devices = validation.device_request(self.devices.parse(devices),
                                                deltas)
        try:
            uuids = self.ledger.reserve(
                context, project_id, deltas, expire, request_id=request_id,
                consumer_id=consumer_id, dry_run=dry_run, devices=devices)
        except exception.OverQuota as refused:
            if not dry_run:
                metrics.count_over_quota(refused.overs)
                if consumer_id is not None:
                    refusals.record(context, project_id, consumer_id,
                                    request_id, refused.overs)
                notifications.over_quota(
                    context, project_id, refused.overs, 'reserve',
                    consumer_id=consumer_id, request_id=request_id)
            raise
        except exception.BudgetExhausted as refused:
            if not dry_run and consumer_id is not None:
                refusals.record(context, project_id, consumer_id,
                                request_id, [refusals.budget_entry(refused)])
            raise
        metrics.count_reservations('reserved', uuids)
        return uuids

    def get_device_allocations(self, context, consumer_id):
        """The devices allocated to ``consumer_id``: ``{"allocations":
        {provider_uuid: {"resources": {rc: n}}}, "project_id", "user_id"}``
        (Placement's shape)."""
        validation.optional_id('consumer_id', consumer_id)
        return self.devices.allocations(context, consumer_id)

    def commit(self, context, project_id, reservations):
        """Move the reservations' counts from reserved to used."""
        validation.project_id(project_id)
        uuids = validation.reservation_uuids(reservations)
        # Counted and told once: a repeated commit ends nothing.
        ended = self.ledger.settle.commit(context, project_id, uuids)
        metrics.count_reservations('committed', ended)
        notifications.reservations_ended(context, 'commit', project_id,
                                         ended)

    def rollback(self, context, project_id, reservations):
        """Give the reservations' reserved counts back."""
        validation.project_id(project_id)
        uuids = validation.reservation_uuids(reservations)
        ended = self.ledger.settle.rollback(context, project_id, uuids)
        metrics.count_reservations('rolled_back', ended)
        notifications.reservations_ended(context, 'rollback', project_id,
                                         ended)

    def release(self, context, project_id, deltas, consumer_id=None):
        """Take positive ``deltas`` off ``used`` at once (a detach)."""
        validation.project_id(project_id)
        deltas = validation.deltas(deltas, positive=True)
        validation.optional_id('consumer_id', consumer_id)
        return self.ledger.release(context, project_id, deltas,
                                   consumer_id=consumer_id)

    def expire(self, context):
        """Roll back expired reservations; returns how many."""
        expired = self.ledger.settle.expire(context)
        if expired:
            metrics.RESERVATIONS.labels('expired').inc(expired)
            notifications.reservations_expired(context, expired)
        return expired

    def purge(self, context):
        """Delete terminal reservation rows, resolved drift events and
        recorded refusals past their retention."""
        return self.ledger.upkeep.purge(context)

    def lease_holdings(self, context, conn, project_id, resources):
        """Lock ``project_id``'s rows of ``resources`` for a lease event in
        the transaction of ``conn`` (the lease engine's); returns the
        ``LeaseHoldings`` that check and move what leases hold."""
        return lease_holdings.LeaseHoldings.lock(
            context, conn, self.ledger.model, project_id, resources)

    def list_reservations(self, context, project_id=None, status=None,
                          limit=1000, marker=None):
        """Reservation rows as dicts, newest first: at most ``limit`` after
        the one whose uuid is ``marker`` (InvalidQuery, 400, when the
        project has none such)."""
        if project_id is not None:
            validation.project_id(project_id)
        return self.ledger.reads.reservations(
            context, project_id=project_id, status=status, limit=limit,
            marker=marker)

    def list_refusals(self, context, project_id=None, consumer_id=None,
                      limit=1000, marker=None):
        """Recorded refusals of reserves for a consumer, newest first, as
        dicts ``{id, project_id, consumer_id, request_id, user_id,
        created_at, overs}``: at most ``limit`` after the one whose id is
        ``marker`` (InvalidQuery, 400, when the listing has none such)."""
        if project_id is not None:
            validation.project_id(project_id)
        validation.optional_id('consumer_id', consumer_id)
        return refusals.list_refusals(
            context, project_id=project_id, consumer_id=consumer_id,
            limit=limit, marker=marker)

    def get_project_usage(self, context, project_id):
        """``{resource: {limit, used, reserved, available}}`` for every
        counted resource; limit and available -1 mean unlimited."""
        validation.project_id(project_id)
        return self.ledger.reads.project_usage(context, project_id,
                                               self.resources)

    def get_usage_document(self, context, project_id):
        """``{project_id, parent_id, resources}``: the project's usage
        (``get_project_usage``) and its parent, read together (in one query
        when the limits are in cyquota's database)."""
        validation.project_id(project_id)
        resources, parent_id = self.ledger.reads.usage_document(
            context, project_id, self.resources)
        return {'project_id': project_id, 'parent_id': parent_id,
                'resources': resources}

    def list_usages(self, context, project_id=None, resource=None,
                    limit=1000, marker=None):
        """Usage rows ``{project_id, resource, used, reserved, limit,
        available}`` in (project, resource) order, a page at a time;
        ``marker`` is ``(project_id, resource)`` of the previous page's last
        row."""
        if project_id is not None:
            validation.project_id(project_id)
        if resource is not None:
            quota_resources.check_resource(resource)
        return self.ledger.reads.usages(
            context, self.resources, project_id=project_id,
            resource=resource, limit=limit, marker=marker)

    # -- what agents report, and repair ------------------------------------

    def record_report(self, context, host, allocations):
        """Make ``allocations`` (``[{project_id, resource, consumer_id,
        amount}]``) the latest report of what ``host`` has attached."""
        attachments.record_report(context, host, allocations)

    def count_usage_rows(self, context, project_id=None):
        """How many usage rows ``check_drift`` and ``repair`` scan."""
        return repair.count_usage_rows(context, project_id)

    def check_drift(self, context, project_id=None, progress=None):
        """Every kind of drift (``repair.Findings``); ``progress(done)``
        after each batch of usage rows."""
        if project_id is not None:
            validation.project_id(project_id)
        return repair.check(context, self.ledger.model, project_id,
                            progress)

    def repair(self, context, project_id=None, progress=None,
               from_reports=False, placement=None):
        """Repair drift; returns ``(changes, acknowledged events)`` (see
        ``repair.sync``). ``from_reports``: first adopt what the agents
        report each consumer holds; or ``placement``
        (``{project_id: {(resource, consumer_id): amount}}``): what the
        cloud's Placement says they hold, each change recorded."""
        if project_id is not None:
            validation.project_id(project_id)
        if from_reports and placement is not None:
            raise exception.Invalid(
                reason='adopt the agents\' reports or Placement\'s '
                       'holdings, not both')
        return repair.sync(context, self.ledger.upkeep, project_id, progress,
                           from_reports=from_reports, placement=placement)

    def usage_counts(self, context, project_id=None):
        """``{(project_id, resource): {"used": n, "leased": n}}`` of the
        usage rows that count something, for a comparison with the
        cloud's Placement."""
        if project_id is not None:
            validation.project_id(project_id)
        return repair.usage_counts(context, project_id)

    def consumer_projects(self, context, consumer_ids):
        """``{consumer_id: project_id}`` of those of ``consumer_ids`` the
        ledger knows."""
        return repair.consumer_projects(context, consumer_ids)
