"""The API's policy checks: the process's enforcer (``cyquota.policy``,
shared with the conductor) on the request's context."""

import pecan

from cyquota import policy

#: Raise PolicyNotAuthorized (403) unless a context may do an action.
authorize = policy.authorize


def authorized_context(action, target=None):
    """The request's context, once ``action`` is allowed on ``target``
    (default: no particular project); PolicyNotAuthorized (403) if not."""
    context = pecan.request.context
    authorize(context, action, target or {})
    return context
