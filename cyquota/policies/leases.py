"""Policies of ``/v1/leases``. A lease belongs to a project: its members
(and admins) make, change and end it, its readers and members (and
admins) read it. The target is the lease's project: the caller's or the
one an admin names on create, the stored lease's otherwise."""

from oslo_policy import policy

from cyquota.policies import base

PREFIX = 'cyquota:leases:%s'
CREATE = PREFIX % 'create'
LIST = PREFIX % 'list'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

# Writing takes the member role: a reader only reads.
PROJECT_MEMBER_OR_ADMIN = (
    '(role:member and project_id:%(project_id)s) or ' + base.ADMIN)

rules = [
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=PROJECT_MEMBER_OR_ADMIN,
        description='Create a lease for a project (an admin may name '
                    'another project than its own).',
        operations=[{'path': '/v1/leases', 'method': 'POST'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.PROJECT_READER_OR_ADMIN,
        description="List a project's leases (every project's: an "
                    "admin without project_id).",
        operations=[{'path': '/v1/leases', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show a lease.',
        operations=[{'path': '/v1/leases/{lease_id}', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=UPDATE, check_str=PROJECT_MEMBER_OR_ADMIN,
        description="Change a lease's name, dates or amounts.",
        operations=[{'path': '/v1/leases/{lease_id}', 'method': 'PUT'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=PROJECT_MEMBER_OR_ADMIN,
        description='End a lease now (it stays readable as ENDED).',
        operations=[{'path': '/v1/leases/{lease_id}', 'method': 'DELETE'}],
        scope_types=['project']),
]


def list_rules():
    return rules
