"""``/v1/refusals``: the reserves for a consumer refused over quota (or,
from microversion 1.8, by an exhausted budget), as cyquota recorded them
(SPEC 3.7), so that a refusal whose error its caller lost (Nova drops
Cyborg's) is found by the instance uuid.

``GET /v1/refusals?consumer_id=&project_id=&limit=&marker=`` lists them
newest first, a page at a time: ``limit`` (lowered to ``[api]
max_limit``, its default) after the refusal whose id is ``marker``; a
full page links to the next. A project's readers and members see its
own (the caller's project when none is named), an admin every
project's.
"""

import pecan

from cyquota.api import microversion
from cyquota.api import policy
from cyquota.api import query
from cyquota.api.schemas import refusal as schema
from cyquota.api.types import refusal as types
from cyquota.policies import refusals as rules
from cyquota import quota


class RefusalsController:
    """``/v1/refusals``."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        microversion.require(microversion.REFUSALS)
        params = query.values(schema.GET_REFUSALS)
        page_size = params['limit']
        context = pecan.request.context
        project_id = policy.listed_project(context, rules.LIST,
                                           params['project_id'])
        rows = quota.QUOTAS.list_refusals(
            context, project_id=project_id,
            consumer_id=params['consumer_id'], limit=page_size,
            marker=params['marker'])
        if not microversion.is_at_least(microversion.BUDGETS):
            for row in rows:
                row.pop('budget', None)
        return types.RefusalsResponse.from_dict(dict(
            {'refusals': rows},
            **query.next_links('refusals', params, rows, page_size,
                               'id'))).to_json()
