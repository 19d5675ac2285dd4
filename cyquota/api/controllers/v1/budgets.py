"""``/v1/budgets``: a project's budgets of accelerator-hours (SPEC 3.8).

``GET /v1/budgets/{project_id}`` shows them (the project's readers and
members, admins); ``PUT`` and ``DELETE /v1/budgets/{project_id}/{resource}``
set or end one and ``POST .../{resource}/credits`` credits hours to it
(admins); ``GET /v1/budgets/{project_id}/entries?limit=&marker=`` pages
through their entries, newest first. Microversion 1.8 and later.

Thin handlers over the books (``cyquota.budgets``): the JSON schemas check
the shape, types and bounds, the QuotaEngine's validation the project id
and resource, the books the rest, each naming the field it refuses.
"""

import pecan
import webob

from cyquota.api import microversion
from cyquota.api import policy
from cyquota.api import query
from cyquota.api.schemas import budget as schema
from cyquota.api.types import budget as types
from cyquota.api import validation
from cyquota.budgets import books
from cyquota.budgets import document
from cyquota.budgets import entries as entry_pages
from cyquota.policies import budgets as rules
from cyquota import quota
from cyquota.quota import resources as quota_resources
from cyquota.quota import validation as quota_validation


def _authorized(rule, project_id, resource=None):
    """The request's context once ``rule`` allows the call on
    ``project_id``, the ids checked (400 naming them)."""
    microversion.require(microversion.BUDGETS)
    context = policy.authorized_context(rule, {'project_id': project_id})
    quota_validation.project_id(project_id)
    if resource is not None:
        quota_resources.check_resource(resource)
    return context


def _document(context, project_id):
    return types.BudgetResponse.from_dict(
        {'budget': document.show(context, project_id)}).to_json()


class CreditsController:
    """``/v1/budgets/{project_id}/{resource}/credits``."""

    def __init__(self, project_id, resource):
        self.project_id = project_id
        self.resource = resource

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='POST', template='json')
    def post(self):
        context = _authorized(rules.CREDIT, self.project_id, self.resource)
        data = validation.json_body(schema.POST_CREDIT)
        written = books.credit(context, self.project_id, self.resource,
                               data['hours'], data['reason'])
        pecan.response.status = 201
        return types.EntryResponse.from_dict({'entry': written}).to_json()


class BudgetController:
    """``/v1/budgets/{project_id}/{resource}``."""

    def __init__(self, project_id, resource):
        self.project_id = project_id
        self.resource = resource
        self.credits = CreditsController(project_id, resource)

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='PUT', template='json')
    def put(self):
        context = _authorized(rules.UPDATE, self.project_id, self.resource)
        data = validation.json_body(schema.PUT_BUDGET)
        books.set_budget(context, self.project_id, self.resource,
                         data['hours'], data.get('refill'), data.get('cap'),
                         model=quota.QUOTAS.limits.model)
        return _document(context, self.project_id)

    @index.when(method='DELETE')
    def delete(self):
        context = _authorized(rules.DELETE, self.project_id, self.resource)
        books.delete_budget(context, self.project_id, self.resource)
        return webob.Response(status=204)


class EntriesController:
    """``/v1/budgets/{project_id}/entries``."""

    def __init__(self, project_id):
        self.project_id = project_id

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        context = _authorized(rules.ENTRIES, self.project_id)
        params = query.values(schema.GET_ENTRIES)
        page_size = params['limit']
        found = entry_pages.page(context, self.project_id, page_size,
                                 params['marker'])
        return types.EntriesResponse.from_dict(dict(
            {'entries': found},
            **query.next_links('entries', params, found, page_size, 'id',
                               path='budgets/%s/entries' % self.project_id))
        ).to_json()


class ProjectBudgetsController:
    """``/v1/budgets/{project_id}``."""

    def __init__(self, project_id):
        self.project_id = project_id
        self.entries = EntriesController(project_id)

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        context = _authorized(rules.SHOW, self.project_id)
        return _document(context, self.project_id)

    @pecan.expose()
    def _lookup(self, resource, *remainder):
        return BudgetController(self.project_id, resource), remainder


class BudgetsController:
    """``/v1/budgets``: only a step towards a project."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @pecan.expose()
    def _lookup(self, project_id, *remainder):
        return ProjectBudgetsController(project_id), remainder
