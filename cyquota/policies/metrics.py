"""Policy of ``GET /metrics`` on the API port.

The exposition names every project holding quota and its usage, so on the
API port only administrators and services read it; a Prometheus scraper
without credentials reads the ``[metrics] listen`` listener instead.
"""

from oslo_policy import policy

from cyquota.policies import base

GET = 'cyquota:metrics:get'

rules = [
    policy.DocumentedRuleDefault(
        name=GET, check_str=base.SERVICE_OR_ADMIN,
        description='Read the Prometheus metrics (every project\'s usage '
                    'among them) on the API port.',
        operations=[{'path': '/metrics', 'method': 'GET'},
                    {'path': '/metrics', 'method': 'HEAD'}],
        scope_types=['project']),
]


def list_rules():
    return rules
