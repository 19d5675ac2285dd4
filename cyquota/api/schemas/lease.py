"""Bodies of ``POST /v1/leases`` and ``PUT /v1/leases/{id}``, and the
query of ``GET /v1/leases``.

The schemas check the shape, the JSON types and the bounds of names, pool
keys and amounts (the LeaseEngine's own constants), naming the field they
refuse; what the values mean (dates and their offsets, ``"now"``, the
window, resource types, ``member_of`` values, the ``[leases]`` bounds) is
checked by the LeaseEngine, whose ``InvalidLease`` names the field and the
value. The descriptions say what it takes; the OpenAPI document shows
them.
"""

from cyquota.api import query
from cyquota.db import lease_models
from cyquota.leases import request

_STRING_OR_NULL = {'type': ['string', 'null']}
_NAME = {'type': 'string', 'minLength': 1,
         'maxLength': request.MAX_NAME_LENGTH}
_AMOUNT = {'type': 'integer', 'minimum': 1, 'maximum': request.MAX_AMOUNT}
_MEMBER_OF = {
    'type': 'array', 'items': {'type': 'string'},
    'description': 'Placement ``member_of`` values (``U``, ``in:U1,U2``, '
                   '``!U``, ``!in:U1,U2``), ANDed.'}
_MEMBER_KEY = {
    'type': ['string', 'null'], 'minLength': 1,
    'maxLength': request.MAX_NAME_LENGTH,
    'description': "A pool key, ``reservation:<id>``: a capability of the "
                   "projects the pool aggregate's ``filter_tenant_id`` "
                   "metadata names (the operator's when it names none); a "
                   "key the caller may not carry is answered as one no "
                   "aggregate holds."}


def _fixed(schema):
    """``schema`` of a field GET shows that a PUT may repeat unchanged."""
    return dict(schema, description='As GET shows it; it cannot change.')


_RESERVATION = {
    'type': 'object',
    'properties': {
        'resource_type': {'type': 'string',
                          'description': '``accelerator:<RESOURCE>``.'},
        'amount': _AMOUNT,
        'member_of': _MEMBER_OF,
        'member_key': _MEMBER_KEY,
    },
    'required': ['resource_type', 'amount'],
    'additionalProperties': False,
}

POST_LEASE = {
    'type': 'object',
    'properties': {
        'lease': {
            'type': 'object',
            'properties': {
                'name': _NAME,
                'project_id': {
                    'type': 'string',
                    'description': "Another project than the caller's "
                                   '(admins).'},
                'start_date': {
                    'type': ['string', 'null'],
                    'description': 'ISO 8601 with a UTC offset, or '
                                   '``"now"``; null or absent is now, at '
                                   'most 60 s in the past.'},
                'end_date': {
                    'type': 'string',
                    'description': 'ISO 8601 with a UTC offset, after '
                                   'start_date.'},
                'reservations': {
                    'type': 'array',
                    'minItems': 1,
                    'items': _RESERVATION,
                },
            },
            'required': ['end_date', 'reservations'],
            'additionalProperties': False,
        },
    },
    'required': ['lease'],
    'additionalProperties': False,
}

_ALLOCATION = {
    'type': 'object',
    'properties': {
        'id': {'type': 'string'},
        'resource_provider_name': _STRING_OR_NULL,
        'amount': {'type': 'integer'},
    },
    'additionalProperties': False,
}

PUT_LEASE = {
    'type': 'object',
    'properties': {
        'lease': {
            'type': 'object',
            'properties': {
                'name': _NAME,
                'start_date': {
                    'type': 'string',
                    'description': 'ISO 8601 with a UTC offset, or '
                                   '``"now"`` (while ``PENDING``).'},
                'end_date': {'type': 'string',
                             'description': 'ISO 8601 with a UTC offset.'},
                'reservations': {
                    'type': 'array',
                    'description': 'Reservations matched by ``id``; only '
                                   'their amounts change (an ``ACTIVE`` '
                                   "lease's may only grow).",
                    'items': {
                        'type': 'object',
                        'properties': {
                            'id': {'type': 'string'},
                            'amount': _AMOUNT,
                            'resource_type': _fixed({'type': 'string'}),
                            'member_of': _fixed({
                                'type': 'array',
                                'items': {'type': 'string'}}),
                            'member_key': _fixed(_STRING_OR_NULL),
                            'allocations': _fixed({'type': 'array',
                                                   'items': _ALLOCATION}),
                        },
                        'required': ['id'],
                        'additionalProperties': False,
                    },
                },
                'id': _fixed({'type': 'string'}),
                'project_id': _fixed({'type': 'string'}),
                'user_id': _fixed(_STRING_OR_NULL),
                'status': _fixed({'type': 'string'}),
                'status_reason': _fixed(_STRING_OR_NULL),
                'created_at': _fixed(_STRING_OR_NULL),
                'updated_at': _fixed(_STRING_OR_NULL),
            },
            'additionalProperties': False,
        },
    },
    'required': ['lease'],
    'additionalProperties': False,
}

GET_LEASES = (
    query.PROJECT_ID, query.one_of('status', lease_models.STATUSES),
    query.PAGE_LIMIT, query.marker("id of the previous page's last lease"))
