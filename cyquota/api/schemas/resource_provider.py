"""Bodies of the resource provider calls, and the filters of their
listing (Placement 1.39)."""

from oslo_utils import uuidutils

from cyquota.api import query
from cyquota import exception
from cyquota.placement import member_of
from cyquota.placement import request

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


def _uuid(name, value):
    if value is not None and not uuidutils.is_uuid_like(value):
        raise exception.InvalidQuery(detail=(
            "Invalid query string parameters: Expected '%s' parameter to be "
            "a format of uuid. Got: %s" % (name, value)))
    return value


def _resources(_name, value):
    return None if value is None else request.parse_resources(value)


def _member_of(_name, values):
    return member_of.parse(values)


GET_RESOURCE_PROVIDERS = (
    query.Parameter('name'),
    query.Parameter('uuid', read=_uuid),
    query.Parameter('in_tree', read=_uuid),
    query.Parameter('resources', description=(
        '``RC:N,RC:N``: providers with room for these amounts.'),
        read=_resources),
    query.Parameter('member_of', description=(
        '``U``, ``in:U1,U2``, ``!U``, ``!in:U1,U2``; repeatable, ANDed.'),
        read=_member_of, repeated=True),
)
