"""Policies of ``/v1/refusals``: the recorded refusals of reserves over
quota are a project's to read (its readers and members), every project's
for an admin."""

from oslo_policy import policy

from cyquota.policies import base

PREFIX = 'cyquota:refusals:%s'
LIST = PREFIX % 'list'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.PROJECT_READER_OR_ADMIN,
        description="List a project's recorded refusals of reserves over "
                    "quota (every project's: an admin without project_id).",
        operations=[{'path': '/v1/refusals', 'method': 'GET'}],
        scope_types=['project']),
]


def list_rules():
    return rules
