"""``/v1/registered_limits``: the default limit of each resource (local
store writes; 409 with the keystone source)."""

import pecan

from cyquota.api import policy
from cyquota.api import query
from cyquota.api.schemas import limit as schema
from cyquota.api.types import registered_limit as types
from cyquota.api import validation
from cyquota.policies import limits as rules
from cyquota import quota


class RegisteredLimitController:
    """``/v1/registered_limits/{resource}``."""

    def __init__(self, resource):
        self.resource = resource

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='PUT', template='json')
    def put(self):
        context = policy.authorized_context(rules.REGISTERED_UPDATE)
        data = validation.json_body(schema.PUT_REGISTERED_LIMIT)
        quota.QUOTAS.limits.set_registered_limit(
            context, self.resource, data['default_limit'])
        return types.RegisteredLimitResponse(
            registered_limit=types.RegisteredLimit(
                resource=self.resource,
                default_limit=data['default_limit'])).to_json()


class RegisteredLimitsController:
    """``/v1/registered_limits``."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        context = policy.authorized_context(rules.REGISTERED_LIST)
        query.values(schema.GET_REGISTERED_LIMITS)
        registered = quota.QUOTAS.limits.get_registered_limits(
            context, quota.QUOTAS.resources)
        return types.RegisteredLimitsResponse(registered_limits=[
            types.RegisteredLimit(resource=resource, default_limit=limit)
            for resource, limit in registered.items()]).to_json()

    @pecan.expose()
    def _lookup(self, resource, *remainder):
        return RegisteredLimitController(resource), remainder
