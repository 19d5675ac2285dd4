"""``/v1``: the API's resources."""

import pecan

from cyquota.api.controllers.v1 import aggregates
from cyquota.api.controllers.v1 import allocation_candidates
from cyquota.api.controllers.v1 import budgets
from cyquota.api.controllers.v1 import leases
from cyquota.api.controllers.v1 import limits
from cyquota.api.controllers.v1 import openapi
from cyquota.api.controllers.v1 import projects
from cyquota.api.controllers.v1 import quota_usages
from cyquota.api.controllers.v1 import refusals
from cyquota.api.controllers.v1 import registered_limits
from cyquota.api.controllers.v1 import reservations
from cyquota.api.controllers.v1 import resource_providers
from cyquota.api.controllers import versions


class V1Controller:
    aggregates = aggregates.AggregatesController()
    allocation_candidates = (
        allocation_candidates.AllocationCandidatesController())
    resource_providers = resource_providers.ResourceProvidersController()
    quota_usages = quota_usages.QuotaUsagesController()
    reservations = reservations.ReservationsController()
    refusals = refusals.RefusalsController()
    limits = limits.LimitsController()
    registered_limits = registered_limits.RegisteredLimitsController()
    projects = projects.ProjectsController()
    leases = leases.LeasesController()
    budgets = budgets.BudgetsController()

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        return {'version': versions.version()}


pecan.route(V1Controller, 'openapi.json', openapi.OpenAPIController())
