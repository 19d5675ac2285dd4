"""The process's policy enforcer (oslo.policy) over the rules in
``cyquota.policies``: the REST API and the conductor's RPC endpoint both
check their callers with it, so one policy file governs both.

Operators override rules in ``[oslo_policy] policy_file`` (default
``policy.yaml`` in the configuration directories); a generated sample with
every default is ``etc/cyquota/policy.yaml.sample``.
"""

import threading

from oslo_policy import opts as policy_opts
from oslo_policy import policy

from cyquota.conf import CONF
from cyquota import exception
from cyquota import policies

# [oslo_policy] is registered before the first enforcer is made, so that
# its options can be read and set.
policy_opts.set_defaults(CONF)

_ENFORCER = None
_LOCK = threading.Lock()


def enforcer():
    """The process's enforcer, made on first use."""
    global _ENFORCER
    if _ENFORCER is None:
        with _LOCK:
            if _ENFORCER is None:
                # Published only once its rules are registered: concurrent
                # first requests must not see an enforcer without them
                # (PolicyNotRegistered, a 500).
                made = policy.Enforcer(CONF)
                made.register_defaults(policies.list_rules())
                _ENFORCER = made
    return _ENFORCER


def reset():
    """Forget the enforcer (and the rules it loaded)."""
    global _ENFORCER
    _ENFORCER = None


def get_enforcer():
    """The ``oslo.policy.enforcer`` entry point, for oslopolicy-* tools."""
    CONF([], project='cyquota')
    return enforcer()


def authorize(context, action, target):
    """Raise PolicyNotAuthorized (403) unless ``context`` may do ``action``
    on ``target`` (a dict such as ``{'project_id': ...}``)."""
    try:
        enforcer().authorize(action, target, context, do_raise=True,
                             exc=exception.PolicyNotAuthorized,
                             action=action)
    except policy.InvalidScope:
        raise exception.PolicyNotAuthorized(action=action)
