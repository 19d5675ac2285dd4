"""Bodies of ``POST /v1/reservations``, its commit and rollback, and
``POST /v1/reservations/release``; the query of ``GET /v1/reservations``.

The schemas check the JSON types; the values (project id form, known
resources, non-zero amounts, dates, uuids) are checked by the
QuotaEngine's validation, whose errors name the field and the value; the
descriptions say what it takes.
"""

from cyquota.api import query
from cyquota.db import models

_STRING_OR_NULL = {'anyOf': [{'type': 'string'}, {'type': 'null'}]}
_PROJECT_ID = {'type': 'string',
               'description': 'A project id (1 to 64 letters, digits, ``-`` '
                              'or ``_``).'}


def _deltas(amount, description):
    """``deltas``: a non-empty ``{resource: amount}`` object."""
    return {'type': 'object', 'minProperties': 1,
            'additionalProperties': dict(amount, type='integer'),
            'description': description}


POST_RESERVATION = {
    'type': 'object',
    'properties': {
        'project_id': _PROJECT_ID,
        'deltas': _deltas({}, '``{resource: non-zero amount}``.'),
        'expire': {
            'anyOf': [{'type': 'integer'}, {'type': 'string'},
                      {'type': 'null'}],
            'description': 'When the reservation expires: whole seconds '
                           'from now (at most ten years), an ISO 8601 date '
                           'and time with a UTC offset, or null for '
                           '``[quota] reservation_expire`` seconds from now; '
                           'the forms the Python and RPC interfaces take, '
                           'less fractional seconds.',
        },
        'request_id': dict(_STRING_OR_NULL, description=(
            'The same request_id again returns the same reservations.')),
        'consumer_id': _STRING_OR_NULL,
        'dry_run': {'type': 'boolean', 'default': False},
        'devices': {
            'type': 'object',
            'description': 'Devices to allocate to ``consumer_id`` '
                           "(required then), as Placement's "
                           'allocation-candidate query parameters '
                           '(``resources``, ``member_of``, ``resourcesN``, '
                           '``member_ofN``, ``group_policy``, '
                           '``member_key``), whose totals equal the positive '
                           'deltas. Rollback and expiry free them.',
            'additionalProperties': {'anyOf': [
                {'type': 'string'},
                {'type': 'array', 'items': {'type': 'string'}}]},
        },
    },
    'required': ['project_id', 'deltas'],
    'additionalProperties': False,
}

FINISH_RESERVATIONS = {
    'type': 'object',
    'properties': {
        'project_id': _PROJECT_ID,
        'reservations': {
            'type': 'array',
            'minItems': 1,
            'items': {'type': 'string', 'description': 'A uuid.'},
        },
    },
    'required': ['project_id', 'reservations'],
    'additionalProperties': False,
}

RELEASE = {
    'type': 'object',
    'properties': {
        'project_id': _PROJECT_ID,
        'deltas': _deltas({'minimum': 1}, '``{resource: positive amount}`` '
                                          'to take off ``used``.'),
        'consumer_id': dict(_STRING_OR_NULL, description=(
            'The consumer (an instance) that gives the amounts back.')),
    },
    'required': ['project_id', 'deltas'],
    'additionalProperties': False,
}

GET_RESERVATIONS = (
    query.PROJECT_ID, query.one_of('status', models.STATUSES),
    query.PAGE_LIMIT,
    query.marker("uuid of the previous page's last reservation"))
