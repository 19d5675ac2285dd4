"""The paths of the version documents, this document, quota usage,
reservations, refusals, limits and projects."""

from cyquota.api.openapi_document import operation as op
from cyquota.api.openapi_document import wsme_schema
from cyquota.api.schemas import limit as limit_schemas
from cyquota.api.schemas import quota_usage as usage_schemas
from cyquota.api.schemas import refusal as refusal_schemas
from cyquota.api.schemas import reservation as reservation_schemas
from cyquota.api.types import limit as limit_types
from cyquota.api.types import project as project_types
from cyquota.api.types import quota_usage as usage_types
from cyquota.api.types import refusal as refusal_types
from cyquota.api.types import registered_limit as registered_types
from cyquota.api.types import reservation as reservation_types

ref = wsme_schema.reference
_WRITE_ERRORS = (400, 403, 409, 413, 415, 503)
_FINISH_ERRORS = (400, 403, 404, 409, 413, 415, 503)


def _versions():
    return {
        '/': {'get': {
            'operationId': 'versions',
            'summary': 'The version document (no authentication needed).',
            'responses': {'200': op.answer('The API versions.', {
                'type': 'object', 'required': ['versions'],
                'properties': {'versions': {
                    'type': 'array', 'items': ref('Version')}}})}}},
        '/v1': {'get': {
            'operationId': 'version',
            'summary': 'The v1 version document.',
            'responses': {'200': op.answer('The version.', {
                'type': 'object', 'required': ['version'],
                'properties': {'version': ref('Version')}})}}},
        '/v1/openapi.json': {'get': {
            'operationId': 'openapi',
            'summary': 'This document, as JSON.',
            'responses': {'200': op.answer('The OpenAPI document.', {
                'type': 'object', 'required': ['openapi', 'paths']})}}},
    }


def _usages(components):
    return {
        '/v1/quota_usages/{project_id}': {'get': {
            'operationId': 'showQuotaUsage',
            'summary': "A project's usage, limits and availability (the "
                       'admin usage endpoint).',
            'description': 'Policy ``cyquota:quota_usages:show`` (admin, or '
                           'a reader or member of the project).',
            'parameters': [op.parameter('ProjectIdPath')],
            'responses': op.answers(
                {'200': op.answer(
                    'Every counted resource of the project.',
                    components.schema_of(usage_types.QuotaUsageResponse))},
                400, 403, 409, 503)}},
        '/v1/quota_usages': {'get': {
            'operationId': 'listQuotaUsages',
            'summary': 'Usage rows of every project, paged (admin).',
            'description': '''\
Rows in (project_id, resource) order, ``limit`` at a time. A full
page has a ``quota_usages_links`` ``next`` link; its ``marker`` is
``<project_id>:<resource>`` of the page's last row.''',
            'parameters': op.query(usage_schemas.GET_QUOTA_USAGES),
            'responses': op.answers(
                {'200': op.answer(
                    'One page of usage rows.',
                    components.schema_of(usage_types.QuotaUsagesResponse))},
                400, 403, 503)}},
    }


def _reservations(components):
    finish = op.body(reservation_schemas.FINISH_RESERVATIONS)
    reserve = components.schema_of(reservation_types.ReserveResponse)
    return {
        '/v1/reservations': {
            'post': {
                'operationId': 'reserve',
                'summary': 'Reserve quota for a project, all resources or '
                           'none (service or admin).',
                'description': '''\
Positive deltas are checked against the project's limit (and its
tree's, under strict-two-level) and held as reserved until commit,
rollback or expiry. The same ``request_id`` again returns the same
reservations. With ``dry_run`` nothing is written and the answer
(200) is the decision: ``dry_run``, ``allowed`` and the ``overs``
that refused it.''',
                'requestBody': op.body(
                    reservation_schemas.POST_RESERVATION, example={
                        'project_id': 'p1', 'deltas': {'FPGA': 2},
                        'expire': None, 'request_id': 'attach-vm-1',
                        'consumer_id': 'vm-1', 'dry_run': False}),
                'responses': op.answers(
                    {'201': op.answer('Reserved.', reserve),
                     '200': op.answer('The decision of a dry run.',
                                      reserve)},
                    400, 409, 413, 415, 503, s403=op.error_document(
                        'Over quota (``cyquota.over_quota``, with '
                        '``overs``) or refused by policy.'))},
            'get': {
                'operationId': 'listReservations',
                'summary': 'Reservations, newest first, paged (admin).',
                'description': '''\
Rows newest first, ``limit`` at a time. A full page has a
``reservations_links`` ``next`` link; its ``marker`` is the uuid of
the page's last row. A marker that names no row (of ``project_id``,
when named) is a 400 ``marker [<marker>] not found``.''',
                'parameters': op.query(
                    reservation_schemas.GET_RESERVATIONS),
                'responses': op.answers(
                    {'200': op.answer(
                        'One page of reservations.', components.schema_of(
                            reservation_types.ReservationsResponse))},
                    400, 403)}},
        '/v1/reservations/commit': {'post': {
            'operationId': 'commit',
            'summary': 'Move reservations from reserved to used (service '
                       'or admin).',
            'description': 'Committing a committed reservation is a no-op; '
                           'a rolled back or expired one is a 409; an '
                           'unknown one a 404.',
            'requestBody': finish,
            'responses': op.answers({'204': op.NO_CONTENT},
                                    *_FINISH_ERRORS)}},
        '/v1/reservations/rollback': {'post': {
            'operationId': 'rollback',
            'summary': 'Give reserved quota back (service or admin).',
            'description': 'Rolling back a rolled back or expired '
                           'reservation is a no-op; a committed one is a '
                           '409; an unknown one a 404.',
            'requestBody': finish,
            'responses': op.answers({'204': op.NO_CONTENT},
                                    *_FINISH_ERRORS)}},
        '/v1/reservations/release': {'post': {
            'operationId': 'release',
            'summary': 'Take quota off used at once: an unbind, a detach '
                       '(service or admin).',
            'description': '''\
The twin of the RPC ``release``: each positive amount comes off the
project's ``used`` (and what ``consumer_id`` holds) in one committed
release row. More than is used stops at zero and is recorded as drift
for ``quota sync``; it is not an error.''',
            'requestBody': op.body(reservation_schemas.RELEASE, example={
                'project_id': 'p1', 'deltas': {'FPGA': 1},
                'consumer_id': 'vm-1'}),
            'responses': op.answers({'204': op.NO_CONTENT},
                                    400, 403, 413, 415, 503)}},
    }


def _refusals(components):
    return {
        '/v1/refusals': {'get': {
            'operationId': 'listRefusals',
            'summary': 'Reserves for a consumer refused over quota, newest '
                       "first, paged (a project's readers: its own; admin: "
                       'all).',
            'description': '''\
A reserve that names a ``consumer_id`` (a Nova instance, for Cyborg's
binds) and is refused over quota (not a dry run) is recorded with the
403's ``overs``, so that it can be found after its caller lost the
error. Without ``project_id`` a project's reader or member sees the
caller's own project, an admin every project's. A full page has a
``refusals_links`` ``next`` link; its ``marker`` is the id of the
page's last refusal. Records are purged after ``[quota]
reservation_retention``.''',
            'parameters': op.query(refusal_schemas.GET_REFUSALS),
            'responses': op.answers(
                {'200': op.answer(
                    'One page of refusals.', components.schema_of(
                        refusal_types.RefusalsResponse))},
                400, 403, 503)}},
    }


def _limits(components):
    return {
        '/v1/limits/model': {'get': {
            'operationId': 'showLimitModel',
            'summary': 'The limit enforcement model (anyone).',
            'responses': op.answers(
                {'200': op.answer('The model.', components.schema_of(
                    limit_types.ModelResponse))}, 403, 503)}},
        '/v1/limits': {'get': {
            'operationId': 'listLimits',
            'summary': 'Explicit project limits (admin; a project\'s '
                       'readers with project_id=<own>).',
            'description': "Without ``project_id`` every project's limits "
                           '(local source only; 400 with keystone).',
            'parameters': op.query(limit_schemas.GET_LIMITS),
            'responses': op.answers(
                {'200': op.answer(
                    'The limits, in (project, resource) order.',
                    components.schema_of(limit_types.LimitsResponse))},
                400, 403, 503)}},
        '/v1/limits/{project_id}/{resource}': {
            'parameters': [op.parameter('ProjectIdPath'),
                           op.parameter('ResourcePath')],
            'put': {
                'operationId': 'setLimit',
                'summary': "Set a project's limit of a resource (admin; 409 "
                           'with the keystone source).',
                'description': "Under strict-two-level a child's limit above "
                               "its parent's, or a parent's below a "
                               "child's, is a 409.",
                'requestBody': op.body(limit_schemas.PUT_LIMIT,
                                       example={'resource_limit': 4}),
                'responses': op.answers(
                    {'200': op.answer(
                        'The limit as set.',
                        components.schema_of(limit_types.LimitResponse))},
                    *_WRITE_ERRORS)},
            'delete': {
                'operationId': 'deleteLimit',
                'summary': "Remove a project's limit of a resource (admin; "
                           '409 with the keystone source).',
                'responses': op.answers({'204': op.NO_CONTENT},
                                        400, 403, 404, 409, 503)}},
        '/v1/registered_limits': {'get': {
            'operationId': 'listRegisteredLimits',
            'summary': 'The registered (default) limit of each resource '
                       'that has one (anyone).',
            'parameters': op.query(limit_schemas.GET_REGISTERED_LIMITS),
            'responses': op.answers(
                {'200': op.answer(
                    'The registered limits.', components.schema_of(
                        registered_types.RegisteredLimitsResponse))},
                400, 403, 503)}},
        '/v1/registered_limits/{resource}': {
            'parameters': [op.parameter('ResourcePath')],
            'put': {
                'operationId': 'setRegisteredLimit',
                'summary': 'Set the registered (default) limit of a '
                           'resource (admin; 409 with the keystone source).',
                'requestBody': op.body(limit_schemas.PUT_REGISTERED_LIMIT,
                                       example={'default_limit': 8}),
                'responses': op.answers(
                    {'200': op.answer(
                        'The registered limit as set.', components.schema_of(
                            registered_types.RegisteredLimitResponse))},
                    *_WRITE_ERRORS)}},
        '/v1/projects/{project_id}': {
            'parameters': [op.parameter('ProjectIdPath')],
            'put': {
                'operationId': 'setProject',
                'summary': 'Register a project under its parent, or rename '
                           'it (admin; 409 with the keystone source).',
                'description': '''\
A project's parent is fixed once it is registered (409); the parent
must be registered first (400). Under strict-two-level a grandchild
is a 409.''',
                'requestBody': op.body(limit_schemas.PUT_PROJECT, example={
                    'parent_id': None, 'name': 'Accelerator team'}),
                'responses': op.answers(
                    {'200': op.answer(
                        'The project as registered.', components.schema_of(
                            project_types.ProjectResponse))},
                    *_WRITE_ERRORS)}},
    }


def paths(components):
    """``{path: path item}`` of this module's calls; answers' types are
    added to ``components`` (a ``wsme_schema.Components``)."""
    found = _versions()
    found.update(_usages(components))
    found.update(_reservations(components))
    found.update(_refusals(components))
    found.update(_limits(components))
    return found
