"""Bodies of ``POST /v1/leases`` and ``PUT /v1/leases/{id}``.

The schemas check the shape and the JSON types, naming the field they
refuse; the values (dates and their offsets, ``"now"``, the window,
amounts, resource types, ``member_of`` values, pool keys) are checked by
the LeaseEngine, whose ``InvalidLease`` names the field and the value.
"""

_STRING_OR_NULL = {'type': ['string', 'null']}

_RESERVATION = {
    'type': 'object',
    'properties': {
        # accelerator:<RESOURCE>
        'resource_type': {'type': 'string'},
        'amount': {'type': 'integer'},
        # Placement member_of values, ANDed.
        'member_of': {'type': 'array', 'items': {'type': 'string'}},
        'member_key': _STRING_OR_NULL,
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
                'name': {'type': 'string'},
                # An admin's lease for another project.
                'project_id': {'type': 'string'},
                # ISO 8601 with a UTC offset, or "now"; null or absent
                # is now.
                'start_date': _STRING_OR_NULL,
                'end_date': {'type': 'string'},
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
                'name': {'type': 'string'},
                'start_date': {'type': 'string'},
                'end_date': {'type': 'string'},
                # Reservations are matched by id; only amounts change.
                'reservations': {
                    'type': 'array',
                    'items': {
                        'type': 'object',
                        'properties': {
                            'id': {'type': 'string'},
                            'amount': {'type': 'integer'},
                            # What GET shows, repeated unchanged (the
                            # LeaseEngine refuses a change).
                            'resource_type': {'type': 'string'},
                            'member_of': {'type': 'array',
                                          'items': {'type': 'string'}},
                            'member_key': _STRING_OR_NULL,
                            'allocations': {'type': 'array',
                                            'items': _ALLOCATION},
                        },
                        'required': ['id'],
                        'additionalProperties': False,
                    },
                },
                # What GET shows, repeated unchanged.
                'id': {'type': 'string'},
                'project_id': {'type': 'string'},
                'user_id': _STRING_OR_NULL,
                'status': {'type': 'string'},
                'status_reason': _STRING_OR_NULL,
                'created_at': _STRING_OR_NULL,
                'updated_at': _STRING_OR_NULL,
            },
            'additionalProperties': False,
        },
    },
    'required': ['lease'],
    'additionalProperties': False,
}
