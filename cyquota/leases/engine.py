"""LeaseEngine: create, read, update and end leases.

Every method takes a request context first. Lease views are dicts shaped
as the REST API answers them::

    {"id", "name", "project_id", "user_id", "start_date", "end_date",
     "status", "status_reason", "created_at", "updated_at",
     "reservations": [{"id", "resource_type", "amount", "member_of",
                       "member_key",
                       "allocations": [{"id", "resource_provider_name",
                                        "amount"}]}]}

with dates as ISO 8601 strings with their UTC offset.
"""


class LeaseEngine:
    """The leases of every project."""

    def create(self, context, project_id, lease):
        """Create a lease for ``project_id`` from ``lease`` (the object
        under ``"lease"`` in a create body: ``end_date``, ``reservations``
        and optionally ``name`` and ``start_date``); returns its view
        (ACTIVE when it starts now, else PENDING).

        :raises InvalidLease: (400) a bad value, naming the field.
        :raises EnforcementDenied: (403) a filter refused it; the lease is
            stored in ERROR with the filter's message as status_reason.
        :raises OverQuota: (403) the window does not fit the quota.
        :raises NoValidAllocation: (409) no devices for the window.
        """
        raise NotImplementedError

    def get(self, context, lease_id):
        """The view of a lease; LeaseNotFound (404) if none."""
        raise NotImplementedError

    def list(self, context, project_id=None, status=None):
        """Views of leases (one project's, or all), newest first."""
        raise NotImplementedError

    def update(self, context, lease_id, changes):
        """Change ``name``, ``end_date``, ``start_date`` (while PENDING)
        and ``amount`` of reservations matched by ``id``; returns the new
        view. A refusal (InvalidLease, EnforcementDenied, OverQuota,
        NoValidAllocation) changes nothing; LeaseConflict (409) for an
        ENDED or ERROR lease."""
        raise NotImplementedError

    def delete(self, context, lease_id):
        """End a PENDING or ACTIVE lease now; it stays readable as ENDED.
        LeaseConflict (409) for an ENDED or ERROR one."""
        raise NotImplementedError

    def start_due(self, context):
        """Start every PENDING lease whose start has come; returns how
        many. Exactly once with several conductors."""
        raise NotImplementedError

    def end_due(self, context):
        """End every ACTIVE lease whose end has come; returns how many.
        Exactly once with several conductors."""
        raise NotImplementedError
