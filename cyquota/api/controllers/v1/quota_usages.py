"""``/v1/quota_usages``: the admin usage endpoint.

``GET /v1/quota_usages/{project_id}``: a project's used, reserved, limit
and available per resource (and its tree's, under strict-two-level); from
microversion 1.8, ``remaining_hours`` of each resource with a budget.

``GET /v1/quota_usages?project_id=&resource=&limit=&marker=``: usage rows
of every project, in (project_id, resource) order, ``limit`` (1-1000,
default 1000) at a time. The marker is ``<project_id>:<resource>`` of the
last row of the previous page (neither part can hold a ``:``); a full page
comes with a ``quota_usages_links`` ``next`` link that carries it.
"""

import urllib.parse

import pecan

from cyquota.api import microversion
from cyquota.api import policy
from cyquota.api import query
from cyquota.api.schemas import quota_usage as schema
from cyquota.api.types import quota_usage as types
from cyquota.policies import quota_usages as rules
from cyquota import quota


def _next_link(params, rows, page_size):
    """The ``quota_usages_links`` of a full page."""
    if len(rows) < page_size:
        return {}
    last = rows[-1]
    params = dict(params, limit=str(page_size),
                  marker='%s:%s' % (last['project_id'], last['resource']))
    href = '%s/v1/quota_usages?%s' % (
        pecan.request.application_url, urllib.parse.urlencode(
            {k: v for k, v in sorted(params.items()) if v is not None}))
    return {'quota_usages_links': [{'rel': 'next', 'href': href}]}


class QuotaUsageController:
    """``/v1/quota_usages/{project_id}``."""

    def __init__(self, project_id):
        self.project_id = project_id

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        context = policy.authorized_context(
            rules.SHOW, {'project_id': self.project_id})
        usage = quota.QUOTAS.get_usage_document(context, self.project_id)
        if not microversion.is_at_least(microversion.BUDGETS):
            for counts in usage['resources'].values():
                counts.pop('remaining_hours', None)
                counts.get('tree', {}).pop('remaining_hours', None)
        return types.QuotaUsageResponse.from_dict(
            {'quota_usage': usage}).to_json()


class QuotaUsagesController:
    """``/v1/quota_usages``."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        params = query.values(schema.GET_QUOTA_USAGES)
        context = policy.authorized_context(rules.LIST, query.target(params))
        page_size = params['limit']
        rows = quota.QUOTAS.list_usages(
            context, project_id=params['project_id'],
            resource=params['resource'], limit=page_size,
            marker=params['marker'])
        return types.QuotaUsagesResponse.from_dict(dict(
            {'quota_usages': rows},
            **_next_link(params, rows, page_size))).to_json()

    @pecan.expose()
    def _lookup(self, project_id, *remainder):
        return QuotaUsageController(project_id), remainder
