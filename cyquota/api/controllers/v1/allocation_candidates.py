"""``GET /v1/allocation_candidates`` (Placement 1.39, plus the lease-pool
rule and its ``member_key`` parameter, whose keys the caller's project and
roles carry)."""

import pecan

from cyquota.api import policy
from cyquota.placement import candidates
from cyquota.placement import request
from cyquota.policies import devices as rules


class AllocationCandidatesController:

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        context = policy.authorized_context(rules.READ)
        device_request = request.from_params(pecan.request.GET)
        return candidates.search(context, device_request)
