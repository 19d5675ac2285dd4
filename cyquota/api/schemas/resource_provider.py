"""Bodies of the resource provider calls (Placement 1.39)."""

_UUID = {'type': 'string', 'format': 'uuid'}

POST_RESOURCE_PROVIDER = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'minLength': 1, 'maxLength': 200},
        'uuid': _UUID,
        'parent_provider_uuid': {'anyOf': [_UUID, {'type': 'null'}]},
    },
    'required': ['name'],
    'additionalProperties': False,
}

PUT_AGGREGATES = {
    'type': 'object',
    'properties': {
        'aggregates': {'type': 'array', 'items': _UUID, 'uniqueItems': True},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}

PUT_TRAITS = {
    'type': 'object',
    'properties': {
        'traits': {
            'type': 'array', 'uniqueItems': True,
            'items': {'type': 'string', 'pattern': '^[A-Z0-9_]+$',
                      'maxLength': 255},
        },
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}
