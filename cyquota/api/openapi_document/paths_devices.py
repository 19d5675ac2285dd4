"""The paths of the device calls: resource providers, aggregates and
allocation candidates, whose bodies are Placement 1.39's."""

from cyquota.api.openapi_document import components as shared
from cyquota.api.openapi_document import operation as op
from cyquota.api.openapi_document import wsme_schema
from cyquota.api import query
from cyquota.api.schemas import aggregate as aggregate_schemas
from cyquota.api.schemas import inventory as inventory_schemas
from cyquota.api.schemas import resource_provider as provider_schemas
from cyquota.placement import request

ref = wsme_schema.reference
_PROVIDER = [op.parameter('ProviderUuid')]
_WRITE_ERRORS = (400, 404, 409, 413, 415)


def _shown(operation_id, description, schema):
    """A GET of a provider's part: its body, or a 404."""
    return {'operationId': operation_id, 'responses': op.answers(
        {'200': op.answer(description, schema)}, 404)}


def _replaced(operation_id, what, body, schema):
    """A PUT that replaces a provider's ``what``."""
    return {
        'operationId': operation_id,
        'summary': "Replace the provider's %s (409 on a stale generation)."
                   % what,
        'requestBody': op.body(body),
        'responses': op.answers(
            {'200': op.answer('The %s as set.' % what, schema)},
            *_WRITE_ERRORS)}


def _providers():
    provider = ref('ResourceProvider')
    return {
        '/v1/resource_providers': {
            'get': {
                'operationId': 'listResourceProviders',
                'summary': 'Resource providers (Placement 1.39), filtered.',
                'parameters': op.query(
                    provider_schemas.GET_RESOURCE_PROVIDERS),
                'responses': op.answers({'200': op.answer(
                    'The providers.', {
                        'type': 'object',
                        'required': ['resource_providers'],
                        'properties': {'resource_providers': {
                            'type': 'array', 'items': provider}}})}, 400)},
            'post': {
                'operationId': 'createResourceProvider',
                'summary': 'Create a resource provider (a compute node, or '
                           'a device under its parent).',
                'requestBody': op.body(
                    provider_schemas.POST_RESOURCE_PROVIDER),
                'responses': op.answers({'200': op.answer(
                    'The provider created (Placement 1.20+).', provider,
                    headers={'Location': {'schema': {'type': 'string'}}})},
                    400, 409, 413, 415)}},
        '/v1/resource_providers/{uuid}': {
            'parameters': _PROVIDER,
            'get': _shown('showResourceProvider', 'The provider.', provider),
            'delete': {'operationId': 'deleteResourceProvider',
                       'responses': op.answers({'204': op.NO_CONTENT},
                                               404, 409)}},
        '/v1/resource_providers/{uuid}/inventories': {
            'parameters': _PROVIDER,
            'get': _shown('showInventories', "The provider's inventories.",
                          ref('Inventories')),
            'put': _replaced('setInventories', 'inventories',
                             inventory_schemas.PUT_INVENTORIES,
                             ref('Inventories'))},
        '/v1/resource_providers/{uuid}/aggregates': {
            'parameters': _PROVIDER,
            'get': _shown('showProviderAggregates',
                          "The provider's aggregates.",
                          ref('ProviderAggregates')),
            'put': _replaced('setProviderAggregates', 'aggregates',
                             provider_schemas.PUT_AGGREGATES,
                             ref('ProviderAggregates'))},
        '/v1/resource_providers/{uuid}/traits': {
            'parameters': _PROVIDER,
            'get': _shown('showProviderTraits', "The provider's traits.",
                          ref('ProviderTraits')),
            'put': _replaced('setProviderTraits', 'traits',
                             provider_schemas.PUT_TRAITS,
                             ref('ProviderTraits'))},
        '/v1/resource_providers/{uuid}/usages': {
            'parameters': _PROVIDER,
            'get': _shown(
                'showProviderUsages',
                "What the provider's allocations use, per resource class.",
                {'type': 'object',
                 'required': ['resource_provider_generation', 'usages'],
                 'properties': {
                     'resource_provider_generation': ref('Generation'),
                     'usages': ref('ResourceAmounts')}})},
        '/v1/resource_providers/{uuid}/allocations': {
            'parameters': _PROVIDER,
            'get': _shown(
                'showProviderAllocations',
                "The provider's allocations, by consumer.",
                {'type': 'object',
                 'required': ['allocations', 'resource_provider_generation'],
                 'properties': {
                     'allocations': shared.allocations(
                         ref('ResourceAmounts')),
                     'resource_provider_generation': ref('Generation')}})},
    }


def _aggregates():
    aggregate = ref('Aggregate')
    return {
        '/v1/aggregates': {'get': {
            'operationId': 'listAggregates',
            'responses': {'200': op.answer(
                'Every aggregate with its name and metadata.', {
                    'type': 'object', 'required': ['aggregates'],
                    'properties': {'aggregates': {
                        'type': 'array', 'items': aggregate}}})}}},
        '/v1/aggregates/{uuid}': {
            'parameters': _PROVIDER,
            'get': _shown('showAggregate', 'The aggregate.', aggregate),
            'put': {
                'operationId': 'setAggregate',
                'summary': "Create or replace an aggregate's name and "
                           'metadata (lease pools are aggregates with '
                           '``reservation:`` metadata keys).',
                'requestBody': op.body(aggregate_schemas.PUT_AGGREGATE),
                'responses': op.answers(
                    {'200': op.answer('The aggregate, replaced.', aggregate),
                     '201': op.answer('The aggregate, created.', aggregate)},
                    400, 413, 415)},
            'delete': {'operationId': 'deleteAggregate',
                       'responses': op.answers({'204': op.NO_CONTENT},
                                               404, 409)}},
    }


# The unnumbered group's parameters and the options; the numbered groups
# are keys no list can name, so the query is read by Placement's own parser
# (``cyquota.placement.request``), whose bounds these are.
_CANDIDATES = (
    query.Parameter('resources'),
    query.Parameter('member_of', repeated=True),
    query.one_of('group_policy', request.GROUP_POLICIES),
    query.Parameter('limit', {'type': 'integer', 'minimum': 1,
                              'maximum': request.MAX_LIMIT}),
    query.Parameter(request.MEMBER_KEY, {'type': 'string', 'minLength': 1,
                                         'maxLength': 255}, repeated=True))


def _candidates():
    return {'/v1/allocation_candidates': {'get': {
        'operationId': 'listAllocationCandidates',
        'summary': 'Devices that can satisfy a request (Placement 1.39, '
                   'with the lease-pool rule).',
        'description': '''\
Numbered groups ``resourcesN`` / ``member_ofN`` (``N`` 1 to 64 of
``[a-zA-Z0-9_-]``) take all their resources from one provider that
is itself in the aggregates; the unnumbered group's ``member_of``
holds when a provider or its root is in them. ``group_policy`` is
required with two or more numbered groups. ``member_key`` (cyquota's
own, repeatable) names the aggregate metadata keys the request
carries for the lease-pool rule; the caller carries a key only into
pools its project may use (``filter_tenant_id``), others answer as
keys no aggregate holds.''',
        'parameters': op.query(_CANDIDATES),
        'responses': op.answers({'200': op.answer(
            'Allocation requests and the summaries of the providers they '
            'use.', ref('AllocationCandidates'))}, 400)}}}


def paths():
    """``{path: path item}`` of the device calls."""
    found = _providers()
    found.update(_aggregates())
    found.update(_candidates())
    return found
