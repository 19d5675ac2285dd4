"""The API's policy checks: the process's enforcer (``cyquota.policy``,
shared with the conductor) on the request's context."""

import pecan

from cyquota import exception
from cyquota import policy
from cyquota.quota import validation as quota_validation

#: Raise PolicyNotAuthorized (403) unless a context may do an action.
authorize = policy.authorize


def authorized_context(action, target=None):
    """The request's context, once ``action`` is allowed on ``target``
    (default: no particular project); PolicyNotAuthorized (403) if not."""
    context = pecan.request.context
    authorize(context, action, target or {})
    return context


def listed_project(context, rule, project_id):
    """The project whose rows the caller may list under ``rule``: the one
    named, else the caller's own; None (every project) for an admin naming
    none.

    Without project_id the empty target, which only an admin rule
    matches, tells an admin from a project's reader or member.
    """
    if project_id is None:
        try:
            authorize(context, rule, {})
            return None
        except exception.PolicyNotAuthorized:
            project_id = context.project_id
        # A caller without a project must not fall through to None,
        # which would mean every project.
        if not project_id:
            raise exception.PolicyNotAuthorized(action=rule)
    authorize(context, rule, {'project_id': project_id})
    quota_validation.project_id(project_id)
    return project_id
