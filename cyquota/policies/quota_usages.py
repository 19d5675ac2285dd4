"""Policies of ``/v1/quota_usages``."""

from oslo_policy import policy

from cyquota.policies import base

PREFIX = 'cyquota:quota_usages:%s'
SHOW = PREFIX % 'show'
LIST = PREFIX % 'list'

rules = [
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.PROJECT_READER_OR_ADMIN,
        description="Show a project's usage, limits and availability.",
        operations=[{'path': '/v1/quota_usages/{project_id}',
                     'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.ADMIN,
        description='List the usage rows of every project.',
        operations=[{'path': '/v1/quota_usages', 'method': 'GET'}],
        scope_types=['project']),
]


def list_rules():
    return rules
