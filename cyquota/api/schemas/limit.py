"""Bodies of the limit store's writes (Keystone-shaped).

The limit values are checked by the limit store (-1 .. 2**31-1), the
project ids and resources too; the schemas check the JSON types, and
their descriptions say what the store takes.
"""

from cyquota.db import models

_LIMIT = {'type': 'integer',
          'description': '-1 (unlimited) or 0 to %d.' % models.MAX_COUNT}

PUT_PROJECT = {
    'type': 'object',
    'properties': {
        'parent_id': {
            'anyOf': [{'type': 'string'}, {'type': 'null'}],
            'description': "The parent's project id (registered first), or "
                           'null for a root; fixed once registered.'},
        'name': {'anyOf': [{'type': 'string', 'minLength': 1,
                            'maxLength': 255},
                           {'type': 'null'}]},
    },
    'additionalProperties': False,
}

PUT_REGISTERED_LIMIT = {
    'type': 'object',
    'properties': {'default_limit': _LIMIT},
    'required': ['default_limit'],
    'additionalProperties': False,
}

PUT_LIMIT = {
    'type': 'object',
    'properties': {'resource_limit': _LIMIT},
    'required': ['resource_limit'],
    'additionalProperties': False,
}
