"""Answers of ``/v1/limits``: project limits and the enforcement model."""

from wsme import types as wtypes

from cyquota.api.types import base

#: The enforcement models' names (``cyquota.quota.limits``; the API layer
#: does not import the engine for them).
MODEL_NAMES = ('flat', 'strict-two-level')


class Limit(base.APIBase):
    """A project's own limit of one resource; -1 means unlimited."""

    project_id = wtypes.text
    resource = wtypes.text
    resource_limit = base.Field(int, schema=base.LIMIT)


class LimitResponse(base.APIBase):
    """Answer of ``PUT /v1/limits/{project_id}/{resource}``."""

    limit = Limit


class LimitsResponse(base.APIBase):
    """Answer of ``GET /v1/limits``."""

    limits = [Limit]


class Model(base.APIBase):
    """The enforcement model: ``flat`` or ``strict-two-level``."""

    name = base.Field(wtypes.text, schema={'enum': list(MODEL_NAMES)})
    description = wtypes.text


class ModelResponse(base.APIBase):
    """Answer of ``GET /v1/limits/model``."""

    model = Model
