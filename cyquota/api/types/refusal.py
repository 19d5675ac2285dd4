"""Bodies of ``/v1/refusals``: the recorded refusals of reserves over
quota."""

from wsme import types as wtypes

from cyquota.api.types import attributes
from cyquota.api.types import base
from cyquota.api.types import link
from cyquota.api.types import reservation


class Refusal(base.APIBase):
    """A reserve for a consumer refused over quota, as recorded."""

    id = base.Field(wtypes.text, schema={'format': 'uuid'})
    project_id = wtypes.text
    consumer_id = wtypes.text
    request_id = base.Field(wtypes.text, nullable=True)
    user_id = base.Field(wtypes.text, nullable=True)
    created_at = attributes.DATETIME
    overs = base.Field(
        [reservation.Over],
        description="What refused it: the 403's ``overs``.")


class RefusalsResponse(base.APIBase):
    """Answer of ``GET /v1/refusals``: a page of refusals, newest first,
    and a ``next`` link in ``refusals_links`` when the page is full."""

    refusals = [Refusal]
    refusals_links = base.Field([link.Link], optional=True)
