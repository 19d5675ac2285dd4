"""Bodies of the limit store's writes (Keystone-shaped).

The limit values are checked by the limit store (-1 .. 2**31-1), the
project ids and resources too; the schemas check the JSON types.
"""

PUT_PROJECT = {
    'type': 'object',
    'properties': {
        'parent_id': {'anyOf': [{'type': 'string'}, {'type': 'null'}]},
        'name': {'anyOf': [{'type': 'string', 'minLength': 1,
                            'maxLength': 255},
                           {'type': 'null'}]},
    },
    'additionalProperties': False,
}

PUT_REGISTERED_LIMIT = {
    'type': 'object',
    'properties': {'default_limit': {'type': 'integer'}},
    'required': ['default_limit'],
    'additionalProperties': False,
}

PUT_LIMIT = {
    'type': 'object',
    'properties': {'resource_limit': {'type': 'integer'}},
    'required': ['resource_limit'],
    'additionalProperties': False,
}
