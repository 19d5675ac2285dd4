"""cyquota's policy rules in code (oslo.policy), one module per resource.

``list_rules()`` is the ``oslo.policy.policies`` entry point that
``oslopolicy-sample-generator --namespace cyquota`` reads; the enforcer is
``cyquota.policy``, for the REST API and the conductor's RPC endpoint.
"""

import itertools

from cyquota.policies import base
from cyquota.policies import budgets
from cyquota.policies import conductor
from cyquota.policies import devices
from cyquota.policies import leases
from cyquota.policies import limits
from cyquota.policies import metrics
from cyquota.policies import quota_usages
from cyquota.policies import refusals
from cyquota.policies import reservations


def list_rules():
    return itertools.chain(base.list_rules(), quota_usages.list_rules(),
                           reservations.list_rules(), refusals.list_rules(),
                           limits.list_rules(), devices.list_rules(),
                           leases.list_rules(), metrics.list_rules(),
                           budgets.list_rules(), conductor.list_rules())
