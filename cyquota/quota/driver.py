"""DbQuotaDriver: the ledger's database work, behind the QuotaEngine.

A thin class, as Cyborg's quota design names it: each operation is one
piece of ``cyquota.quota.ledger`` (whose docstring holds the lock order),
set up for the configured enforcement model and device hook. Input is
validated by the engine before it gets here.
"""

from cyquota.quota.ledger import lease_holdings
from cyquota.quota.ledger import reads
from cyquota.quota.ledger import release
from cyquota.quota.ledger import reserve
from cyquota.quota.ledger import settle
from cyquota.quota.ledger import upkeep


class DbQuotaDriver:
    """Keeps ``quota_usages`` and ``reservations`` right.

    :param model: the enforcement model that gives each project's limits
        (``cyquota.quota.limits.model``).
    :param devices: the device hook: ``claim(context, consumer_id,
        project_id, request, user_id)`` joins the caller's transaction,
        ``free(context, consumer_id)``, ``holds(context, consumer_id)``;
        ``in_statement(request)`` and ``steps`` claim the common request
        inside the ledger's one statement.
    """

    def __init__(self, model, devices):
        self.model = model
        self._reserve = reserve.Reserve(model, devices)
        self._settle = settle.Settle(model, devices)
        self._release = release.Release(model, devices)
        self._reads = reads.Reads(model)
        self._upkeep = upkeep.Upkeep(model)

    def reserve(self, context, project_id, deltas, expire, request_id=None,
                consumer_id=None, dry_run=False, devices=None):
        """Hold ``deltas`` until commit, rollback or ``expire``; returns
        the reservation uuids (``[]`` for a dry run)."""
        return self._reserve(context, project_id, deltas, expire,
                             request_id=request_id, consumer_id=consumer_id,
                             dry_run=dry_run, devices=devices)

    def commit(self, context, project_id, uuids):
        """Move reserved counts to used; returns the uuids this call
        committed (a repeated commit: none)."""
        return self._settle.commit(context, project_id, uuids)

    def rollback(self, context, project_id, uuids):
        """Give reserved counts back; returns the uuids this call rolled
        back."""
        return self._settle.rollback(context, project_id, uuids)

    def expire(self, context):
        """Expire every reservation past its expiry; returns how many."""
        return self._settle.expire(context)

    def release(self, context, project_id, deltas, consumer_id=None):
        """Take ``deltas`` off used at once; returns the release rows'
        uuids."""
        return self._release(context, project_id, deltas,
                             consumer_id=consumer_id)

    def purge(self, context):
        """Delete terminal rows past their retention; returns how many."""
        return self._upkeep.purge(context)

    def sync_usage(self, context, project_id, resources, expected_counts):
        """Set a project's counts to what its records say."""
        return self._upkeep.sync_usage(context, project_id, resources,
                                       expected_counts)

    def adopt_consumer_usage(self, context, project_id, holdings):
        """Set what a project's consumers hold to ``holdings``."""
        return self._upkeep.adopt_consumer_usage(context, project_id,
                                                 holdings)

    def lease_holdings(self, context, conn, project_id, resources):
        """Lock ``project_id``'s rows of ``resources`` for a lease event in
        the transaction of ``conn``; returns the ``LeaseHoldings``."""
        return lease_holdings.LeaseHoldings.lock(context, conn, self.model,
                                                 project_id, resources)

    def list_reservations(self, context, project_id=None, status=None,
                          limit=1000, marker=None):
        """Reservation rows as dicts, newest first, a page at a time."""
        return self._reads.reservations(context, project_id=project_id,
                                        status=status, limit=limit,
                                        marker=marker)

    def get_project_usage(self, context, project_id, resources):
        """``{resource: {limit, used, reserved, available, ...}}``."""
        return self._reads.project_usage(context, project_id, resources)

    def get_usage_document(self, context, project_id, resources):
        """``({resource: {limit, used, ...}}, parent_id)``."""
        return self._reads.usage_document(context, project_id, resources)

    def list_usages(self, context, resources, project_id=None,
                    resource=None, limit=1000, marker=None):
        """Usage rows with their limits, a page at a time."""
        return self._reads.usages(context, resources, project_id=project_id,
                                  resource=resource, limit=limit,
                                  marker=marker)
