"""Server side of the conductor RPC API: the agents' calls, served by the
QuotaEngine.

The endpoint trusts the request context that comes with a message (the
message bus is the services' own, as in Nova and Cyborg); the QuotaEngine
validates every argument, so bad input raises a specific
``exception.Invalid`` and changes nothing.
"""

import oslo_messaging

from cyquota.conductor import rpc
from cyquota import exception
from cyquota import quota

# Quota errors are answers, not failures of the conductor: they go back to
# the caller without a traceback in the conductor's log.
_answers_with_quota_errors = oslo_messaging.expected_exceptions(
    exception.CyquotaException)


class ConductorManager:
    """The conductor's RPC endpoint, API version 1.0 (see ``rpcapi``)."""

    target = oslo_messaging.Target(version=rpc.API_VERSION)

    @_answers_with_quota_errors
    def reserve(self, context, project_id, deltas, expire=None,
                request_id=None, consumer_id=None):
        return quota.QUOTAS.reserve(context, project_id, deltas,
                                    expire=expire, request_id=request_id,
                                    consumer_id=consumer_id)

    @_answers_with_quota_errors
    def commit(self, context, project_id, reservations):
        quota.QUOTAS.commit(context, project_id, reservations)

    @_answers_with_quota_errors
    def rollback(self, context, project_id, reservations):
        quota.QUOTAS.rollback(context, project_id, reservations)

    @_answers_with_quota_errors
    def release(self, context, project_id, deltas, consumer_id=None):
        return quota.QUOTAS.release(context, project_id, deltas,
                                    consumer_id=consumer_id)

    @_answers_with_quota_errors
    def get_usage(self, context, project_id):
        return quota.QUOTAS.get_project_usage(context, project_id)

    @_answers_with_quota_errors
    def report_allocations(self, context, host, allocations):
        quota.QUOTAS.record_report(context, host, allocations)
