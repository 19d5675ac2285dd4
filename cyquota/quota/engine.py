"""QuotaEngine: the public face of the quota ledger.

It validates caller input (so bad input never reaches the database) and
hands the work to its driver, the DbQuotaDriver. Every method takes a
request context first, as in Nova and Cyborg.
"""

from cyquota import exception
from cyquota.placement import allocations as device_allocations
from cyquota.quota import driver as quota_driver
from cyquota.quota import limits
from cyquota.quota import resources as quota_resources
from cyquota.quota import validation


class QuotaEngine:
    """Reserve, commit, roll back, release and expire accelerator quota.

    The driver (and with it the limit source) is built from the
    configuration on first use, so the engine can be imported before the
    configuration is parsed.
    """

    def __init__(self, driver=None):
        self._driver = driver

    @property
    def driver(self):
        if self._driver is None:
            source = limits.load_source()
            self._driver = quota_driver.DbQuotaDriver(
                limits.load_model(source))
        return self._driver

    @property
    def limit_source(self):
        return self.driver.model.source

    def reset(self):
        """Rebuild the driver from the configuration on next use."""
        self._driver = None

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
            devices = validation.device_request(devices, deltas)
        return self.driver.reserve(context, project_id, deltas, expire,
                                   request_id=request_id,
                                   consumer_id=consumer_id, dry_run=dry_run,
                                   devices=devices)

    def get_device_allocations(self, context, consumer_id):
        """The devices allocated to ``consumer_id``: ``{"allocations":
        {provider_uuid: {"resources": {rc: n}}}, "project_id", "user_id"}``
        (Placement's shape)."""
        validation.optional_id('consumer_id', consumer_id)
        return device_allocations.get_for_consumer(context, consumer_id)

    def commit(self, context, project_id, reservations):
        """Move the reservations' counts from reserved to used."""
        validation.project_id(project_id)
        uuids = validation.reservation_uuids(reservations)
        self.driver.commit(context, project_id, uuids)

    def rollback(self, context, project_id, reservations):
        """Give the reservations' reserved counts back."""
        validation.project_id(project_id)
        uuids = validation.reservation_uuids(reservations)
        self.driver.rollback(context, project_id, uuids)

    def release(self, context, project_id, deltas, consumer_id=None):
        """Take positive ``deltas`` off ``used`` at once (a detach)."""
        validation.project_id(project_id)
        deltas = validation.deltas(deltas, positive=True)
        validation.optional_id('consumer_id', consumer_id)
        return self.driver.release(context, project_id, deltas,
                                   consumer_id=consumer_id)

    def expire(self, context):
        """Roll back expired reservations; returns how many."""
        return self.driver.expire(context)

    def purge(self, context):
        """Delete terminal reservation rows past their retention."""
        return self.driver.purge(context)

    def list_reservations(self, context, project_id=None, status=None,
                          limit=1000):
        """Reservation rows as dicts, newest first."""
        if project_id is not None:
            validation.project_id(project_id)
        return self.driver.list_reservations(
            context, project_id=project_id, status=status, limit=limit)

    def get_project_usage(self, context, project_id):
        """``{resource: {limit, used, reserved, available}}`` for every
        counted resource; limit and available -1 mean unlimited."""
        validation.project_id(project_id)
        return self.driver.get_project_usage(context, project_id,
                                             self.resources)

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
        return self.driver.list_usages(
            context, self.resources, project_id=project_id,
            resource=resource, limit=limit, marker=marker)
