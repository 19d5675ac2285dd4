"""Server side of the conductor RPC API: the agents' calls, served by the
QuotaEngine.

The conductor trusts what the REST API trusts: every call is checked
with the same policy rules and enforcer (``cyquota.policy``), so it needs
the service role (or admin) on the request context, and an agent's report
is taken only from a context whose ``host`` is the report's. Whoever can
publish on the topic can claim any context, though: the broker's
credentials and virtual host are the boundary (``doc/source/
deployment.rst``). The QuotaEngine validates every argument, so bad input
raises a specific ``exception.Invalid`` and changes nothing.
"""

from oslo_log import log as logging
import oslo_messaging

from cyquota.conductor import rpc
from cyquota import exception
from cyquota.policies import conductor as conductor_rules
from cyquota.policies import reservations as reservation_rules
from cyquota import policy
from cyquota import quota

LOG = logging.getLogger(__name__)

# Quota errors are answers, not failures of the conductor: they go back to
# the caller without a traceback in the conductor's log.
_answers_with_quota_errors = oslo_messaging.expected_exceptions(
    exception.CyquotaException)


def _sender(context):
    """Who sent a message, as its context claims, for the log."""
    return 'user %r, project %r, roles %r, host %r' % (
        context.user_id, context.project_id, context.roles, context.host)


def _authorize(context, action, target):
    """Refuse (PolicyNotAuthorized, logged) unless the policy allows."""
    try:
        policy.authorize(context, action, target)
    except exception.PolicyNotAuthorized:
        LOG.warning('Refused RPC %s from %s', action, _sender(context))
        raise


class ConductorManager:
    """The conductor's RPC endpoint, API version 1.0 (see ``rpcapi``)."""

    target = oslo_messaging.Target(version=rpc.API_VERSION)

    @_answers_with_quota_errors
    def reserve(self, context, project_id, deltas, expire=None,
                request_id=None, consumer_id=None):
        _authorize(context, reservation_rules.CREATE,
                   {'project_id': project_id})
        return quota.QUOTAS.reserve(context, project_id, deltas,
                                    expire=expire, request_id=request_id,
                                    consumer_id=consumer_id)

    @_answers_with_quota_errors
    def commit(self, context, project_id, reservations):
        _authorize(context, reservation_rules.COMMIT,
                   {'project_id': project_id})
        quota.QUOTAS.commit(context, project_id, reservations)

    @_answers_with_quota_errors
    def rollback(self, context, project_id, reservations):
        _authorize(context, reservation_rules.ROLLBACK,
                   {'project_id': project_id})
        quota.QUOTAS.rollback(context, project_id, reservations)

    @_answers_with_quota_errors
    def release(self, context, project_id, deltas, consumer_id=None):
        _authorize(context, conductor_rules.RELEASE,
                   {'project_id': project_id})
        return quota.QUOTAS.release(context, project_id, deltas,
                                    consumer_id=consumer_id)

    @_answers_with_quota_errors
    def get_usage(self, context, project_id):
        _authorize(context, conductor_rules.GET_USAGE,
                   {'project_id': project_id})
        return quota.QUOTAS.get_project_usage(context, project_id)

    @_answers_with_quota_errors
    def report_allocations(self, context, host, allocations):
        _authorize(context, conductor_rules.REPORT_ALLOCATIONS,
                   {'host': host})
        if context.host != host:
            # The host's last report stays: the sync would adopt a forged
            # one (``quota sync --from-reports``).
            LOG.warning('Refused a report of the allocations on host %r '
                        'from %s: a host reports only its own', host,
                        _sender(context))
            raise exception.ReportNotFromHost(
                host=host, sender=context.host or 'no host')
        quota.QUOTAS.record_report(context, host, allocations)
