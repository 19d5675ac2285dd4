"""Bodies of the budgets' writes and the query of their entries.

The schemas check the JSON types and the bounds; the books
(``cyquota.budgets.units``) check what the schemas cannot say (at most six
decimals, a cap no lower than the hours and only with ``carry``), naming
the field.
"""

from cyquota.api import query
from cyquota.budgets import units
from cyquota.db import budget_models


def _hours(description, low='minimum'):
    """Accelerator-hours, from 0 (``low``: ``minimum``) or above it
    (``exclusiveMinimum``)."""
    return {'type': 'number', low: 0, 'maximum': units.MAX_HOURS,
            'description': description + ' At most six decimals.'}


PUT_BUDGET = {
    'type': 'object',
    'properties': {
        'hours': _hours('Accelerator-hours per period.'),
        'refill': {'type': 'string', 'enum': list(budget_models.REFILLS),
                   'description': "At each period's start: ``reset`` "
                                  '(the default) makes the balance '
                                  '``hours``; ``carry`` adds ``hours``, up '
                                  'to ``cap``.'},
        'cap': {'anyOf': [_hours('The most a carry refill leaves, at least '
                                 '``hours``.'),
                          {'type': 'null'}]},
    },
    'required': ['hours'],
    'additionalProperties': False,
}

POST_CREDIT = {
    'type': 'object',
    'properties': {
        'hours': _hours("Hours added to this period's balance.",
                        low='exclusiveMinimum'),
        'reason': {'type': 'string', 'minLength': 1,
                   'maxLength': units.MAX_REASON},
    },
    'required': ['hours', 'reason'],
    'additionalProperties': False,
}

GET_ENTRIES = (query.PAGE_LIMIT,
               query.marker("id of the previous page's last entry"))
