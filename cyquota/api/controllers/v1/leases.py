"""``/v1/leases``: accelerators held by a project for a time window.

``POST /v1/leases`` creates a lease for the caller's project (an admin may
name ``project_id``) and answers 201; ``GET
/v1/leases?status=&project_id=&limit=&marker=`` lists a project's leases
(a reader's or member's own project by default, every project's for an
admin without ``project_id``), newest first, a page at a time: ``limit``
(lowered to ``[api] max_limit``, its default) after the lease whose id is
``marker``, and a full page links to the next; ``GET``, ``PUT`` (a
partial lease) and ``DELETE`` (an early end, 204) act on
``/v1/leases/{lease_id}``.

The JSON schemas check the shape, the JSON types and the bounds; the
LeaseEngine checks what the values mean and says which field it refuses.
Policy is judged against the lease's project, so a lease is read before a
call on it is authorized; a lease the caller may not read is answered as an
unknown id is (404, the same body), so that ids of other projects' leases
cannot be confirmed.
"""

import pecan
import webob

from cyquota.api import microversion
from cyquota.api import policy
from cyquota.api import query
from cyquota.api.schemas import lease as schema
from cyquota.api.types import lease as types
from cyquota.api import validation
from cyquota import exception
from cyquota import leases
from cyquota.policies import leases as rules
from cyquota.quota import validation as quota_validation


def _refuse_growth_below_its_version(lease, changes):
    """Before ACTIVE_LEASE_GROWS an ACTIVE lease's amounts were fixed."""
    if lease['status'] != 'ACTIVE' or microversion.is_at_least(
            microversion.ACTIVE_LEASE_GROWS):
        return
    held = {item['id']: item['amount'] for item in lease['reservations']}
    for item in changes.get('reservations') or ():
        amount = held.get(item.get('id'))
        if amount is not None and item.get('amount', amount) != amount:
            raise exception.LeaseConflict(
                action='change the amounts of', lease_id=lease['id'],
                status='ACTIVE')


def _answer(view):
    return types.LeaseResponse.from_dict({'lease': view}).to_json()


class LeaseController:
    """``/v1/leases/{lease_id}``."""

    def __init__(self, lease_id):
        self.lease_id = lease_id

    def _authorized(self, rule):
        """The request's context and the lease's view, once ``rule``
        allows the call on the lease's project."""
        context = pecan.request.context
        lease = leases.LEASES.get(context, self.lease_id)
        target = {'project_id': lease['project_id']}
        try:
            policy.authorize(context, rules.SHOW, target)
        except exception.PolicyNotAuthorized:
            raise exception.LeaseNotFound(lease_id=self.lease_id) from None
        policy.authorize(context, rule, target)
        return context, lease

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        microversion.require(microversion.LEASES)
        _context, lease = self._authorized(rules.SHOW)
        return _answer(lease)

    @index.when(method='PUT', template='json')
    def put(self):
        microversion.require(microversion.LEASES)
        changes = validation.json_body(schema.PUT_LEASE)['lease']
        context, lease = self._authorized(rules.UPDATE)
        _refuse_growth_below_its_version(lease, changes)
        return _answer(leases.LEASES.update(context, self.lease_id, changes))

    @index.when(method='DELETE')
    def delete(self):
        microversion.require(microversion.LEASES)
        context, _lease = self._authorized(rules.DELETE)
        leases.LEASES.delete(context, self.lease_id)
        return webob.Response(status=204)


class LeasesController:
    """``/v1/leases``."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        microversion.require(microversion.LEASES)
        microversion.require_parameters(microversion.LIST_PAGES,
                                        ('limit', 'marker'))
        params = query.values(schema.GET_LEASES)
        page_size = params['limit']
        context = pecan.request.context
        project_id = policy.listed_project(context, rules.LIST,
                                           params['project_id'])
        found = leases.LEASES.list(
            context, project_id=project_id, status=params['status'],
            limit=page_size, marker=params['marker'])
        return types.LeasesResponse.from_dict(dict(
            {'leases': found},
            **query.next_links('leases', params, found, page_size,
                               'id'))).to_json()

    @index.when(method='POST', template='json')
    def post(self):
        microversion.require(microversion.LEASES)
        lease = validation.json_body(schema.POST_LEASE)['lease']
        project_id = lease.pop('project_id', pecan.request.context.project_id)
        context = policy.authorized_context(rules.CREATE,
                                            {'project_id': project_id})
        quota_validation.project_id(project_id)
        view = leases.LEASES.create(context, project_id, lease)
        pecan.response.status = 201
        return _answer(view)

    @pecan.expose()
    def _lookup(self, lease_id, *remainder):
        if '\x00' in lease_id:
            # No lease id holds one (PostgreSQL would refuse to compare).
            raise exception.LeaseNotFound(lease_id=lease_id)
        return LeaseController(lease_id), remainder
