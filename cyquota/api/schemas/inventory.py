"""Body of ``PUT /resource_providers/{uuid}/inventories`` (Placement 1.39)."""

from cyquota.placement import inventories

MAX_INT = inventories.MAX_INT
# The largest value a single precision SQL float holds.
SQL_SP_FLOAT_MAX = 3.40282e+38


def _integer(minimum):
    return {'type': 'integer', 'minimum': minimum, 'maximum': MAX_INT}


INVENTORY = {
    'type': 'object',
    'properties': {
        'total': _integer(1),
        'reserved': _integer(0),
        'min_unit': _integer(1),
        'max_unit': _integer(1),
        'step_size': _integer(1),
        'allocation_ratio': {'type': 'number', 'minimum': 0,
                             'maximum': SQL_SP_FLOAT_MAX},
    },
    'required': ['total'],
    'additionalProperties': False,
}

PUT_INVENTORIES = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {
            'type': 'object',
            'patternProperties': {'^[A-Z0-9_]+$': INVENTORY},
            'additionalProperties': False,
        },
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}
