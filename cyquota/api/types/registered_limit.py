"""Answers of ``/v1/registered_limits``: each resource's default limit."""

from wsme import types as wtypes

from cyquota.api.types import base


class RegisteredLimit(base.APIBase):
    """The limit of a resource for a project without one of its own; -1
    means unlimited."""

    resource = wtypes.text
    default_limit = base.Field(int, schema=base.LIMIT)


class RegisteredLimitResponse(base.APIBase):
    """Answer of ``PUT /v1/registered_limits/{resource}``."""

    registered_limit = RegisteredLimit


class RegisteredLimitsResponse(base.APIBase):
    """Answer of ``GET /v1/registered_limits``."""

    registered_limits = [RegisteredLimit]
