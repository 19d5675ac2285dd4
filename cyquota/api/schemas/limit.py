"""Bodies of the limit store's writes (Keystone-shaped), and the queries
of its listings.

The schemas check the JSON types and the limits' bounds; the project ids,
parents and resources are checked by the limit store, and the
descriptions say what it takes.
"""

from cyquota.api import query
from cyquota.db import models

_LIMIT = {'type': 'integer', 'minimum': -1, 'maximum': models.MAX_COUNT,
          'description': '-1 is unlimited.'}

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

GET_LIMITS = (query.PROJECT_ID,)
#: No filters: any key is a 400.
GET_REGISTERED_LIMITS = ()
