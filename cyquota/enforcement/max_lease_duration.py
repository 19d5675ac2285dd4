"""MaxLeaseDurationFilter: refuse leases longer than ``[enforcement]
max_lease_duration`` seconds."""

import datetime

from cyquota.enforcement import base
from cyquota.enforcement import payload


class MaxLeaseDurationFilter(base.BaseFilter):
    """Refuse a lease whose ``end_date - start_date`` exceeds the maximum.

    The maximum is ``[enforcement] max_lease_duration`` (-1: none), or,
    while that is -1, the deprecated ``reservation_max_length`` (0: none).
    An update is measured from the ``start_date`` of the requested lease,
    which for an active lease is its original start. Projects in
    ``max_lease_duration_exempt_project_ids`` are not limited. Also
    registered under the deprecated name MaximumReservationLengthFilter.
    """

    name = 'MaxLeaseDurationFilter'

    def maximum(self):
        """The maximum duration in seconds, or None for no limit."""
        options = self.conf.enforcement
        if options.max_lease_duration != -1:
            return options.max_lease_duration
        if options.reservation_max_length > 0:
            return options.reservation_max_length
        return None

    def check_create(self, context, lease):
        self._check(context, lease)

    def check_update(self, context, current_lease, lease):
        self._check(context, lease)

    def _check(self, context, lease):
        maximum = self.maximum()
        exempt = self.conf.enforcement.max_lease_duration_exempt_project_ids
        if maximum is None or context['project_id'] in exempt:
            return
        duration = (payload.parse_date(lease['end_date'])
                    - payload.parse_date(lease['start_date']))
        seconds = duration.total_seconds()
        if seconds > maximum:
            self.deny(
                'The lease lasts %s (%s seconds), longer than the maximum '
                'lease duration of %s (%d seconds).'
                % (duration, int(seconds) if seconds.is_integer()
                   else seconds, datetime.timedelta(seconds=maximum),
                   maximum))
