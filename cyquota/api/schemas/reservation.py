"""Bodies of ``POST /v1/reservations`` and its commit and rollback.

The schemas check the JSON types; the values (project id form, known
resources, non-zero amounts, dates, uuids) are checked by the
QuotaEngine's validation, whose errors name the field and the value.
"""

_STRING_OR_NULL = {'anyOf': [{'type': 'string'}, {'type': 'null'}]}

POST_RESERVATION = {
    'type': 'object',
    'properties': {
        'project_id': {'type': 'string'},
        'deltas': {
            'type': 'object',
            'minProperties': 1,
            'additionalProperties': {'type': 'integer'},
        },
        # Seconds from now, or an ISO 8601 date and time: the form is
        # checked here, the value by the engine (it says why it refuses).
        'expire': {'anyOf': [{'type': 'integer'}, {'type': 'string'},
                             {'type': 'null'}]},
        'request_id': _STRING_OR_NULL,
        'consumer_id': _STRING_OR_NULL,
        'dry_run': {'type': 'boolean'},
        # Placement's allocation-candidate query parameters.
        'devices': {
            'type': 'object',
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
        'project_id': {'type': 'string'},
        'reservations': {
            'type': 'array',
            'minItems': 1,
            'items': {'type': 'string'},
        },
    },
    'required': ['project_id', 'reservations'],
    'additionalProperties': False,
}
