"""Answers of ``/v1/projects/{project_id}``: a project of the local limit
store, under its parent."""

from wsme import types as wtypes

from cyquota.api.types import base


class Project(base.APIBase):
    """A registered project; ``parent_id`` is null for a root."""

    id = wtypes.text
    parent_id = base.Field(wtypes.text, nullable=True)
    name = base.Field(wtypes.text, nullable=True)


class ProjectResponse(base.APIBase):
    """Answer of ``PUT /v1/projects/{project_id}``."""

    project = Project
