"""``Link``: a link to another page of a listing."""

from wsme import types as wtypes

from cyquota.api.types import base


class Link(base.APIBase):
    """``{"rel": "next", "href": URL}``."""

    rel = wtypes.text
    href = wtypes.text
