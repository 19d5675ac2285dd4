"""Policies of ``/v1/reservations``; the conductor's RPC ``reserve``,
``commit`` and ``rollback`` are checked with the same rules (its
``release`` with ``cyquota:conductor:release``, of the same default as
``RELEASE``)."""

from oslo_policy import policy

from cyquota.policies import base

PREFIX = 'cyquota:reservations:%s'
CREATE = PREFIX % 'create'
COMMIT = PREFIX % 'commit'
ROLLBACK = PREFIX % 'rollback'
RELEASE = PREFIX % 'release'
LIST = PREFIX % 'list'

rules = [
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.SERVICE_OR_ADMIN,
        description='Reserve quota for a project (or check a reservation '
                    'with dry_run).',
        operations=[{'path': '/v1/reservations', 'method': 'POST'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=COMMIT, check_str=base.SERVICE_OR_ADMIN,
        description="Commit a project's reservations.",
        operations=[{'path': '/v1/reservations/commit', 'method': 'POST'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=ROLLBACK, check_str=base.SERVICE_OR_ADMIN,
        description="Roll back a project's reservations.",
        operations=[{'path': '/v1/reservations/rollback',
                     'method': 'POST'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=RELEASE, check_str=base.SERVICE_OR_ADMIN,
        description="Take amounts off a project's usage at once (a "
                    "detach, an unbind).",
        operations=[{'path': '/v1/reservations/release',
                     'method': 'POST'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.ADMIN,
        description='List reservations.',
        operations=[{'path': '/v1/reservations', 'method': 'GET'}],
        scope_types=['project']),
]


def list_rules():
    return rules
