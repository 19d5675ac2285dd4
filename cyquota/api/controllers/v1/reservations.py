"""``/v1/reservations``: reserve, commit, roll back and release quota over
REST.

``POST /v1/reservations`` takes ``expire`` as on the Python and RPC
interfaces: whole seconds from now, an ISO 8601 date and time with its UTC
offset, or null for ``[quota] reservation_expire`` seconds from now. It
answers 201 with the reservation uuids and the expiry (ISO 8601 with its
UTC offset). With ``"dry_run": true`` nothing is written and the answer
is 200 with the decision: ``allowed`` and, when refused, the ``overs`` an
over-quota error would carry. A
retried reserve (same ``request_id``) returns the first reserve's uuids;
its ``expire`` is the one this request computed, the stored expiry stays
the first one's.

``POST /v1/reservations/release`` takes positive amounts off ``used`` at
once (an unbind, a detach), as the RPC ``release`` does, and answers 204:
more than the project (or the consumer) uses stops at zero and is
recorded as drift, as on every interface.

``GET /v1/reservations?project_id=&status=&limit=&marker=`` (admin) lists
the rows newest first, a page at a time: ``limit`` (lowered to ``[api]
max_limit``, its default) after the row whose uuid is ``marker``; a full
page links to the next.
"""

import datetime

import pecan
import webob

from cyquota.api import microversion
from cyquota.api import policy
from cyquota.api import query
from cyquota.api.schemas import reservation as schema
from cyquota.api.types import reservation as types
from cyquota.api import validation
from cyquota import exception
from cyquota.policies import reservations as rules
from cyquota import quota
from cyquota.quota import validation as quota_validation


def _expire(value):
    """The expiry of a reserve, as an aware datetime."""
    return quota_validation.expire(value).replace(
        tzinfo=datetime.timezone.utc)


def _require_versions(data):
    """Refuse the parts of a reserve newer than the request's version."""
    if data.get('devices') is not None:
        microversion.require(microversion.RESERVE_DEVICES,
                             "The field 'devices'")
    if isinstance(data.get('expire'), (int, float)):
        microversion.require(microversion.EXPIRE_SECONDS,
                             "The field 'expire' in seconds")


class _FinishController:
    """``POST /v1/reservations/commit`` or ``/rollback``."""

    def __init__(self, rule, action):
        self.rule = rule
        self.action = action

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='POST')
    def post(self):
        data = validation.json_body(schema.FINISH_RESERVATIONS)
        context = policy.authorized_context(
            self.rule, {'project_id': data['project_id']})
        self.action(context, data['project_id'], data['reservations'])
        return webob.Response(status=204)


class _ReleaseController:
    """``POST /v1/reservations/release``."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='POST')
    def post(self):
        microversion.require(microversion.RELEASE)
        data = validation.json_body(schema.RELEASE)
        context = policy.authorized_context(
            rules.RELEASE, {'project_id': data['project_id']})
        quota.QUOTAS.release(context, data['project_id'], data['deltas'],
                             consumer_id=data.get('consumer_id'))
        return webob.Response(status=204)


class ReservationsController:
    """``/v1/reservations``."""

    commit = _FinishController(rules.COMMIT, quota.QUOTAS.commit)
    rollback = _FinishController(rules.ROLLBACK, quota.QUOTAS.rollback)
    release = _ReleaseController()

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        microversion.require_parameters(microversion.LIST_PAGES,
                                        ('limit', 'marker'))
        params = query.values(schema.GET_RESERVATIONS)
        context = policy.authorized_context(rules.LIST, query.target(params))
        page_size = params['limit']
        rows = quota.QUOTAS.list_reservations(
            context, project_id=params['project_id'],
            status=params['status'], limit=page_size,
            marker=params['marker'])
        return types.ReservationsResponse.from_dict(dict(
            {'reservations': rows},
            **query.next_links('reservations', params, rows, page_size,
                               'uuid'))).to_json()

    @index.when(method='POST', template='json')
    def post(self):
        data = validation.json_body(schema.POST_RESERVATION)
        project_id = data['project_id']
        context = policy.authorized_context(rules.CREATE,
                                            {'project_id': project_id})
        _require_versions(data)
        expire = _expire(data.get('expire'))
        dry_run = data.get('dry_run', False)
        devices = data.get('devices')
        try:
            uuids = quota.QUOTAS.reserve(
                context, project_id, data['deltas'], expire=expire,
                request_id=data.get('request_id'),
                consumer_id=data.get('consumer_id'), dry_run=dry_run,
                devices=devices)
        except exception.OverQuota as error:
            if not dry_run:
                raise
            return types.ReserveResponse.from_dict({
                'dry_run': True, 'allowed': False, 'overs': error.overs,
                'reservations': [], 'expire': expire}).to_json()
        if dry_run:
            return types.ReserveResponse.from_dict({
                'dry_run': True, 'allowed': True, 'overs': [],
                'reservations': uuids, 'expire': expire}).to_json()
        pecan.response.status = 201
        result = {'reservations': uuids, 'expire': expire}
        if devices is not None:
            result['allocations'] = quota.QUOTAS.get_device_allocations(
                context, data['consumer_id'])['allocations']
        return types.ReserveResponse.from_dict(result).to_json()
