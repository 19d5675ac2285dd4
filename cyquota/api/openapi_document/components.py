"""What the OpenAPI document says once for every path: the API's
description, security schemes, shared parameters and headers, the error
answer, and the bodies no WSME type declares (versions, errors, and the
Placement-shaped device calls, which answer as Placement 1.39 does)."""

from cyquota.api import microversion
from cyquota.api.openapi_document import wsme_schema
from cyquota.api.schemas import inventory

ref = wsme_schema.reference

INFO = {
    'title': 'cyquota',
    'version': str(microversion.MAX_VERSION),
    'summary': 'Accelerator (FPGA, GPU) quota usage, reservations, leases, '
               'limits and devices.',
    'description': '''\
The REST API of cyquota, served by ``cyquota-api``
(default ``http://127.0.0.1:6780``) and by ``cyquota.api.wsgi``.

Authentication: with ``[api] auth_strategy = keystone`` every call but
``GET /`` needs a Keystone token in ``X-Auth-Token`` (401 without one,
in keystonemiddleware's own error form); with ``noauth`` (the embedded
default) the ``X-Project-Id``, ``X-User-Id`` and ``X-Roles`` headers are
trusted as sent. Policy (oslo.policy, ``etc/cyquota/policy.yaml.sample``):
admins read everything and write limits; the ``service`` role reserves,
commits and rolls back; a project's readers and members read their own
project, and its members make, change and end its leases. A call the
policy refuses is a 403 ``cyquota.forbidden``.

Every error is ``{"errors": [{"status", "code", "title", "detail",
"request_id"}]}``; an over-quota error (403 ``cyquota.over_quota``) also
carries ``overs``. Every response has an ``X-Openstack-Request-Id``.

The device calls (resource providers, aggregates, allocation
candidates) take and return Placement 1.39's bodies.

Microversions: a request may name the version it speaks in
``OpenStack-API-Version: accelerator-quota X.Y`` (or ``latest``); the
version document (``GET /``) gives the range, ``min_version`` to
``max_version``. Without the header a request is served %(default)s, the
version this document describes. A malformed version is a 400
``cyquota.invalid_version``, one outside the range a 406
``cyquota.unsupported_version``; every other answer says the version it
was served at in ``OpenStack-API-Version``, with ``Vary:
OpenStack-API-Version``. Below its version a change is refused: a path
as unknown (404), a field or a query parameter with a 400 naming it.
''' % {'default': str(microversion.DEFAULT_VERSION)},
}

SERVERS = [{'url': 'http://127.0.0.1:6780'}]

SECURITY_SCHEMES = {
    'keystone': {
        'type': 'apiKey', 'in': 'header', 'name': 'X-Auth-Token',
        'description': 'A Keystone token (``[api] auth_strategy = '
                       'keystone``).'},
    'noauthProject': {
        'type': 'apiKey', 'in': 'header', 'name': 'X-Project-Id',
        'description': "The caller's project (``noauth``)."},
    'noauthRoles': {
        'type': 'apiKey', 'in': 'header', 'name': 'X-Roles',
        'description': "The caller's roles, comma separated (``noauth``)."},
}

#: No credentials (``GET /``), a token, or the noauth headers.
SECURITY = [{}, {'keystone': []}, {'noauthProject': [], 'noauthRoles': []}]

PARAMETERS = {
    'ProjectIdPath': {
        'name': 'project_id', 'in': 'path', 'required': True,
        'description': 'A project id (1 to 64 letters, digits, ``-`` or '
                       '``_``).',
        'schema': ref('ProjectId'), 'example': 'p1'},
    'ResourcePath': {
        'name': 'resource', 'in': 'path', 'required': True,
        'description': 'A counted resource class (``FPGA``, ``GPU``, and '
                       '``[quota] resources``).',
        'schema': {'type': 'string'}, 'example': 'FPGA'},
    'ProviderUuid': {
        'name': 'uuid', 'in': 'path', 'required': True,
        'schema': {'type': 'string'}},
    'ApiVersion': {
        'name': microversion.HEADER, 'in': 'header',
        'description': 'The version the request speaks (default %s).'
                       % str(microversion.DEFAULT_VERSION),
        'schema': {'type': 'string',
                   'example': microversion.header_value(
                       microversion.MAX_VERSION)}},
}

HEADERS = {
    'RequestId': {
        'description': "The request's id, ``req-<uuid>``.",
        'schema': {'type': 'string', 'pattern': '^req-[0-9a-f-]{36}$'}},
    'ApiVersion': {
        'description': 'The version the answer was served at.',
        'schema': {'type': 'string',
                   'pattern': '^%s [0-9]+\\.[0-9]+$'
                              % microversion.SERVICE_TYPE}},
    'Vary': {
        'description': 'The answer depends on the request\'s '
                       '``OpenStack-API-Version``.',
        'schema': {'type': 'string'}},
}

_REQUEST_ID = {'X-Openstack-Request-Id': {
    '$ref': '#/components/headers/RequestId'}}
#: The headers of an answer served at a version.
VERSIONED = {
    microversion.HEADER: {'$ref': '#/components/headers/ApiVersion'},
    'Vary': {'$ref': '#/components/headers/Vary'}}

RESPONSES = {
    'Error': {
        'description': 'An error: ``{"errors": [{status, code, title, '
                       'detail, request_id}]}``.',
        'headers': _REQUEST_ID,
        'content': {'application/json': {'schema': ref('ErrorDocument')}}},
    'NoContent': {'description': 'Done.',
                  'headers': dict(_REQUEST_ID, **VERSIONED)},
}

_UUID = {'type': 'string', 'format': 'uuid'}
_NULLABLE_UUID = {'type': ['string', 'null'], 'format': 'uuid'}
_GENERATION = ref('Generation')
_LINKS = {'type': 'array', 'items': ref('Link')}


def _object(properties, required=None, **keywords):
    """An object schema; every property is required unless ``required``
    names some."""
    return dict({'type': 'object',
                 'required': list(properties if required is None
                                  else required),
                 'properties': properties}, **keywords)


def allocations(amounts):
    """``{provider uuid: {"resources": amounts}}``, as Placement shows a
    consumer's allocations."""
    return {'type': 'object', 'additionalProperties': _object(
        {'resources': amounts})}


SCHEMAS = {
    'ProjectId': {'type': 'string', 'pattern': '^[A-Za-z0-9_-]{1,64}$'},
    'Error': _object({
        'status': {'type': 'integer'},
        'code': {'type': 'string', 'pattern': r'^cyquota\.[a-z_]+$'},
        'title': {'type': 'string'},
        'detail': {'type': 'string'},
        'request_id': {'type': ['string', 'null']},
        'overs': {'type': 'array', 'items': ref('OverInError')},
    }, required=['status', 'code', 'title', 'detail', 'request_id']),
    'ErrorDocument': _object({'errors': {
        'type': 'array', 'minItems': 1, 'items': ref('Error')}}),
    'OverInError': {'allOf': [ref('Over'), {
        'type': 'object',
        'properties': {
            'promised': {
                'type': 'integer',
                'description': 'What pending leases are promised at their '
                               'peak, when it played a part.'},
            'leases': {
                'type': 'integer',
                'description': "For a lease, what other leases hold at the "
                               "window's peak."},
        }}]},
    'Version': _object({
        'id': {'type': 'string'}, 'status': {'type': 'string'},
        'min_version': {'type': 'string'},
        'max_version': {'type': 'string'}, 'links': _LINKS}),
    'Generation': {'type': 'integer', 'minimum': 0},
    'ResourceProvider': _object({
        'uuid': _UUID, 'name': {'type': 'string'},
        'generation': _GENERATION,
        'parent_provider_uuid': _NULLABLE_UUID,
        'root_provider_uuid': _UUID, 'links': _LINKS}),
    'Inventory': inventory.INVENTORY,
    'Inventories': _object({
        'resource_provider_generation': _GENERATION,
        'inventories': {'type': 'object',
                        'additionalProperties': ref('Inventory')}}),
    'ProviderAggregates': _object({
        'aggregates': {'type': 'array', 'items': _UUID},
        'resource_provider_generation': _GENERATION}),
    'ProviderTraits': _object({
        'traits': {'type': 'array', 'items': {'type': 'string'}},
        'resource_provider_generation': _GENERATION}),
    'Aggregate': _object({
        'uuid': _UUID, 'name': {'type': ['string', 'null']},
        'metadata': {'type': 'object',
                     'additionalProperties': {'type': 'string'}}}),
    'ResourceAmounts': {'type': 'object', 'additionalProperties': {
        'type': 'integer', 'minimum': 0}},
    'ProviderSummary': _object({
        'resources': {'type': 'object', 'additionalProperties': _object(
            {'capacity': {'type': 'integer'}, 'used': {'type': 'integer'}})},
        'traits': {'type': 'array', 'items': {'type': 'string'}},
        'parent_provider_uuid': _NULLABLE_UUID,
        'root_provider_uuid': _UUID}),
    'AllocationCandidates': _object({
        'allocation_requests': {'type': 'array', 'items': _object({
            'allocations': allocations(ref('ResourceAmounts')),
            'mappings': {'type': 'object', 'additionalProperties': {
                'type': 'array', 'items': _UUID}}})},
        'provider_summaries': {'type': 'object',
                               'additionalProperties': ref('ProviderSummary')},
    }),
}
