"""Bodies of ``/v1/projects/{project_id}``: a project of the local limit
store, under its parent."""

import wsme
from wsme import types as wtypes

from cyquota.api.types import base


class ProjectRequest(base.APIBase):
    """Body of ``PUT /v1/projects/{project_id}``: null or no ``parent_id``
    registers a root."""

    parent_id = wsme.wsattr(wtypes.text, default=None)
    name = wsme.wsattr(wtypes.text, default=None)


class Project(base.APIBase):
    """A registered project; ``parent_id`` is null for a root."""

    id = wtypes.text
    parent_id = base.Field(wtypes.text, nullable=True)
    name = base.Field(wtypes.text, nullable=True)


class ProjectResponse(base.APIBase):
    """Answer of ``PUT /v1/projects/{project_id}``."""

    project = Project
