"""The query of ``GET /v1/refusals``."""

from cyquota.api import query

GET_REFUSALS = (
    query.Parameter('consumer_id'), query.PROJECT_ID, query.PAGE_LIMIT,
    query.marker("id of the previous page's last refusal"))
