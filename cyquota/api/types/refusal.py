"""Bodies of ``/v1/refusals``: the recorded refusals of reserves over
quota or by an exhausted budget."""

from wsme import types as wtypes

from cyquota.api.types import attributes
from cyquota.api.types import base
from cyquota.api.types import link
from cyquota.api.types import reservation


class BudgetRefusal(base.APIBase):
    """The budget that refused a reserve: what its 403
    (``cyquota.budget_exhausted``) named."""

    project_id = wtypes.text
    resource = wtypes.text
    period_start = attributes.DATETIME
    period_end = attributes.DATETIME
    balance_hours = float
    requested_hours = float


class Refusal(base.APIBase):
    """A reserve for a consumer refused over quota (``overs``) or by an
    exhausted budget (``budget``, microversion 1.8 and later; its
    ``overs`` are empty), as recorded."""

    id = base.Field(wtypes.text, schema={'format': 'uuid'})
    project_id = wtypes.text
    consumer_id = wtypes.text
    request_id = base.Field(wtypes.text, nullable=True)
    user_id = base.Field(wtypes.text, nullable=True)
    created_at = attributes.DATETIME
    overs = base.Field(
        [reservation.Over],
        description="What refused it: the 403's ``overs``.")
    budget = base.Field(BudgetRefusal, optional=True)


class RefusalsResponse(base.APIBase):
    """Answer of ``GET /v1/refusals``: a page of refusals, newest first,
    and a ``next`` link in ``refusals_links`` when the page is full."""

    refusals = [Refusal]
    refusals_links = base.Field([link.Link], optional=True)
