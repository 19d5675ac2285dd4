"""Body of ``PUT /v1/aggregates/{uuid}``."""

PUT_AGGREGATE = {
    'type': 'object',
    'properties': {
        'name': {'anyOf': [{'type': 'string', 'minLength': 1,
                            'maxLength': 255},
                           {'type': 'null'}]},
        'metadata': {
            'type': 'object',
            'propertyNames': {'minLength': 1, 'maxLength': 255},
            'additionalProperties': {'type': 'string', 'maxLength': 255},
        },
    },
    'additionalProperties': False,
}
