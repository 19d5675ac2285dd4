"""Policies of the limit store: ``/v1/limits``, ``/v1/registered_limits``
and ``/v1/projects``. Reads follow Keystone's unified limits (the model
and registered limits are public to any caller, project limits to the
project); writes are for admins."""

from oslo_policy import policy

from cyquota.policies import base

MODEL = 'cyquota:limits:model'
LIST = 'cyquota:limits:list'
UPDATE = 'cyquota:limits:update'
DELETE = 'cyquota:limits:delete'
REGISTERED_LIST = 'cyquota:registered_limits:list'
REGISTERED_UPDATE = 'cyquota:registered_limits:update'
PROJECT_UPDATE = 'cyquota:projects:update'

rules = [
    policy.DocumentedRuleDefault(
        name=MODEL, check_str=base.ANYONE,
        description='Show the limit enforcement model.',
        operations=[{'path': '/v1/limits/model', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.PROJECT_READER_OR_ADMIN,
        description='List project limits (a project reader: with '
                    'project_id=<own project>).',
        operations=[{'path': '/v1/limits', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=UPDATE, check_str=base.ADMIN,
        description="Set a project's limit of a resource.",
        operations=[{'path': '/v1/limits/{project_id}/{resource}',
                     'method': 'PUT'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description="Remove a project's limit of a resource.",
        operations=[{'path': '/v1/limits/{project_id}/{resource}',
                     'method': 'DELETE'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=REGISTERED_LIST, check_str=base.ANYONE,
        description='List registered (default) limits.',
        operations=[{'path': '/v1/registered_limits', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=REGISTERED_UPDATE, check_str=base.ADMIN,
        description='Set the registered (default) limit of a resource.',
        operations=[{'path': '/v1/registered_limits/{resource}',
                     'method': 'PUT'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=PROJECT_UPDATE, check_str=base.ADMIN,
        description='Register a project (under its parent) or rename it.',
        operations=[{'path': '/v1/projects/{project_id}', 'method': 'PUT'}],
        scope_types=['project']),
]


def list_rules():
    return rules
