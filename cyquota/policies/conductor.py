"""Policies of the conductor's RPC calls that have no REST twin. Its
``reserve``, ``commit`` and ``rollback`` are checked with the rules of
``/v1/reservations``: an agent needs the service role, over RPC as over
REST."""

from oslo_policy import policy

from cyquota.policies import base

PREFIX = 'cyquota:conductor:%s'
RELEASE = PREFIX % 'release'
GET_USAGE = PREFIX % 'get_usage'
REPORT_ALLOCATIONS = PREFIX % 'report_allocations'

rules = [
    policy.RuleDefault(
        name=RELEASE, check_str=base.SERVICE_OR_ADMIN,
        description="RPC release: take a detached device's count off a "
                    "project's usage.",
        scope_types=['project']),
    policy.RuleDefault(
        name=GET_USAGE, check_str=base.SERVICE_OR_ADMIN,
        description="RPC get_usage: read a project's usage, limits and "
                    "availability.",
        scope_types=['project']),
    policy.RuleDefault(
        name=REPORT_ALLOCATIONS, check_str=base.SERVICE_OR_ADMIN,
        description="RPC report_allocations: replace a host's report of "
                    "what it has attached (the target's host is the "
                    "report's; the conductor also refuses a report about "
                    "another host than the sender's own).",
        scope_types=['project']),
]


def list_rules():
    return rules
