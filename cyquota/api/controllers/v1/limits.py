"""``/v1/limits``: the enforcement model and project limits.

The writes go to the embedded (local) limit store; with the keystone
source they are refused with 409 (``cyquota.limit_source_read_only``):
limits are set in Keystone. Reads go through the limit-source hook, so
they answer for either source; listing every project's limits (no
``project_id``) is the local store's alone.
"""

import pecan
import webob

from cyquota.api import policy
from cyquota.api import query
from cyquota.api.schemas import limit as schema
from cyquota.api.types import limit as types
from cyquota.api import validation
from cyquota import exception
from cyquota.policies import limits as rules
from cyquota import quota
from cyquota.quota import validation as quota_validation


class LimitController:
    """``/v1/limits/{project_id}/{resource}``."""

    def __init__(self, project_id, resource):
        self.project_id = project_id
        self.resource = resource

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='PUT', template='json')
    def put(self):
        context = policy.authorized_context(
            rules.UPDATE, {'project_id': self.project_id})
        data = validation.json_body(schema.PUT_LIMIT)
        quota.QUOTAS.limits.set_project_limit(
            context, self.project_id, self.resource, data['resource_limit'])
        return types.LimitResponse(limit=types.Limit(
            project_id=self.project_id, resource=self.resource,
            resource_limit=data['resource_limit'])).to_json()

    @index.when(method='DELETE')
    def delete(self):
        context = policy.authorized_context(
            rules.DELETE, {'project_id': self.project_id})
        quota.QUOTAS.limits.delete_project_limit(
            context, self.project_id, self.resource)
        return webob.Response(status=204)


class ProjectLimitsController:
    """``/v1/limits/{project_id}``: only a step towards a resource."""

    def __init__(self, project_id):
        self.project_id = project_id

    @pecan.expose()
    def _lookup(self, resource, *remainder):
        return LimitController(self.project_id, resource), remainder


class ModelController:
    """``GET /v1/limits/model``."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        policy.authorized_context(rules.MODEL)
        model = quota.QUOTAS.limits.model
        return types.ModelResponse(model=types.Model(
            name=model.name, description=model.description)).to_json()

    @pecan.expose()
    def _lookup(self, resource, *remainder):
        # A project whose id is "model": its limits live under the same
        # path as the model document.
        return LimitController('model', resource), remainder


class LimitsController:
    """``/v1/limits``."""

    model = ModelController()

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        params = query.values(schema.GET_LIMITS)
        context = policy.authorized_context(rules.LIST, query.target(params))
        project_id = params['project_id']
        limits = quota.QUOTAS.limits
        if project_id is not None:
            quota_validation.project_id(project_id)
            own = limits.get_project_limits(context, project_id,
                                            quota.QUOTAS.resources)
            return types.LimitsResponse(limits=[
                types.Limit(project_id=project_id, resource=resource,
                            resource_limit=limit)
                for resource, limit in own.items()]).to_json()
        if not limits.writable:
            raise exception.InvalidQuery(
                detail="Invalid query string parameters: 'project_id' is "
                       "required with the %s limit source."
                       % limits.source.name)
        return types.LimitsResponse.from_dict(
            {'limits': limits.list_project_limits(context)}).to_json()

    @pecan.expose()
    def _lookup(self, project_id, *remainder):
        return ProjectLimitsController(project_id), remainder
