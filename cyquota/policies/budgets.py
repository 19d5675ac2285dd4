"""Policies of ``/v1/budgets``: a project's readers and members read its
budgets and their entries; admins set, delete and credit them."""

from oslo_policy import policy

from cyquota.policies import base

PREFIX = 'cyquota:budgets:%s'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'
CREDIT = PREFIX % 'credit'
ENTRIES = PREFIX % 'entries'

_ONE = '/v1/budgets/{project_id}/{resource}'

rules = [
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.PROJECT_READER_OR_ADMIN,
        description="Show a project's budgets of accelerator-hours and "
                    'their balances.',
        operations=[{'path': '/v1/budgets/{project_id}', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=UPDATE, check_str=base.ADMIN,
        description="Set or change a project's budget of a resource.",
        operations=[{'path': _ONE, 'method': 'PUT'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description="End a project's budget of a resource.",
        operations=[{'path': _ONE, 'method': 'DELETE'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=CREDIT, check_str=base.ADMIN,
        description="Credit hours to a project's budget of a resource.",
        operations=[{'path': _ONE + '/credits', 'method': 'POST'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=ENTRIES, check_str=base.PROJECT_READER_OR_ADMIN,
        description="List the entries of a project's budgets.",
        operations=[{'path': '/v1/budgets/{project_id}/entries',
                     'method': 'GET'}],
        scope_types=['project']),
]


def list_rules():
    return rules
