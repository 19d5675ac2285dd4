"""``/v1/projects/{project_id}``: register a project of the local limit
store under its parent, or rename it (409 with the keystone source, whose
projects live in Keystone)."""

import pecan

from cyquota.api import policy
from cyquota.api.schemas import limit as schema
from cyquota.api.types import project as types
from cyquota.api import validation
from cyquota.policies import limits as rules
from cyquota import quota


class ProjectController:
    """``/v1/projects/{project_id}``."""

    def __init__(self, project_id):
        self.project_id = project_id

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='PUT', template='json')
    def put(self):
        context = policy.authorized_context(
            rules.PROJECT_UPDATE, {'project_id': self.project_id})
        data = validation.json_body(schema.PUT_PROJECT)
        project = quota.QUOTAS.limits.set_project(
            context, self.project_id, parent_id=data.get('parent_id'),
            name=data.get('name'))
        return types.ProjectResponse.from_dict(
            {'project': project}).to_json()


class ProjectsController:
    """``/v1/projects``: only a step towards a project."""

    @pecan.expose()
    def _lookup(self, project_id, *remainder):
        return ProjectController(project_id), remainder
