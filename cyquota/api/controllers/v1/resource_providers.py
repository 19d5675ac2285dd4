"""``/v1/resource_providers`` and its sub-resources (Placement 1.39 bodies).

Every write to a provider's inventories, aggregates or traits carries the
``resource_provider_generation`` the caller last saw; a stale one is a 409
and changes nothing. With ``[placement] source = placement`` the providers
are a copy of the cloud's Placement: every write here is a 409
``cyquota.managed_by_placement`` (aggregate names and metadata stay
cyquota's, on ``/v1/aggregates``).
"""

import pecan
import webob

from cyquota.api import policy
from cyquota.api import query
from cyquota.api.schemas import inventory as inventory_schema
from cyquota.api.schemas import resource_provider as schema
from cyquota.api import validation
from cyquota.conf import CONF
from cyquota.placement import aggregates
from cyquota.placement import allocations
from cyquota.placement import device_errors
from cyquota.placement import inventories
from cyquota.placement import providers
from cyquota.placement import traits
from cyquota.policies import devices as rules

_LINKS = ('inventories', 'usages', 'aggregates', 'traits', 'allocations')


def _url(uuid):
    return '%s/v1/resource_providers/%s' % (pecan.request.script_name, uuid)


def _view(provider):
    url = _url(provider.uuid)
    return {
        'uuid': provider.uuid,
        'name': provider.name,
        'generation': provider.generation,
        'parent_provider_uuid': provider.parent_provider_uuid,
        'root_provider_uuid': provider.root_provider_uuid,
        'links': [{'rel': 'self', 'href': url}] + [
            {'rel': rel, 'href': '%s/%s' % (url, rel)} for rel in _LINKS],
    }


def _writable(context, what):
    """``context``, once device writes are cyquota's to take.

    :raises ManagedByPlacement: (409) the devices are Placement's copy.
    """
    if CONF.placement.source == 'placement':
        raise device_errors.ManagedByPlacement(what=what)
    return context


class _GenerationalController:
    """A provider sub-resource read with, and written as of, the provider
    generation: ``GET`` and ``PUT`` with Placement's bodies."""

    def __init__(self, uuid):
        self.uuid = uuid

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        return self._body(*self._read(
            policy.authorized_context(rules.READ), self.uuid))

    @index.when(method='PUT', template='json')
    def put(self):
        context = _writable(policy.authorized_context(rules.WRITE),
                            self._what)
        data = validation.json_body(self._schema)
        return self._body(*self._write(
            context, self.uuid, int(data['resource_provider_generation']),
            self._value(data)))


class InventoriesController(_GenerationalController):
    """``/v1/resource_providers/{uuid}/inventories``."""

    _schema = inventory_schema.PUT_INVENTORIES
    _what = "the provider's inventories"
    _read = staticmethod(inventories.get_all)
    _write = staticmethod(inventories.set_all)

    @staticmethod
    def _body(generation, inventory):
        return {'resource_provider_generation': generation,
                'inventories': inventory}

    @staticmethod
    def _value(data):
        return {rc: {field: (float(value) if field == 'allocation_ratio'
                             else int(value))
                     for field, value in fields.items()}
                for rc, fields in data['inventories'].items()}


class AggregatesController(_GenerationalController):
    """``/v1/resource_providers/{uuid}/aggregates``."""

    _schema = schema.PUT_AGGREGATES
    _what = "the provider's aggregates"
    _read = staticmethod(aggregates.get_for_provider)
    _write = staticmethod(aggregates.set_for_provider)

    @staticmethod
    def _body(generation, uuids):
        return {'aggregates': uuids,
                'resource_provider_generation': generation}

    @staticmethod
    def _value(data):
        return data['aggregates']


class TraitsController(_GenerationalController):
    """``/v1/resource_providers/{uuid}/traits``."""

    _schema = schema.PUT_TRAITS
    _what = "the provider's traits"
    _read = staticmethod(traits.get_for_provider)
    _write = staticmethod(traits.set_for_provider)

    @staticmethod
    def _body(generation, names):
        return {'traits': names, 'resource_provider_generation': generation}

    @staticmethod
    def _value(data):
        return data['traits']


class UsagesController:
    """``/v1/resource_providers/{uuid}/usages``."""

    def __init__(self, uuid):
        self.uuid = uuid

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        generation, used = allocations.usages(
            policy.authorized_context(rules.READ), self.uuid)
        return {'resource_provider_generation': generation, 'usages': used}


class AllocationsController:
    """``/v1/resource_providers/{uuid}/allocations``."""

    def __init__(self, uuid):
        self.uuid = uuid

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        generation, held = allocations.get_for_provider(
            policy.authorized_context(rules.READ), self.uuid)
        return {'allocations': held,
                'resource_provider_generation': generation}


class ResourceProviderController:
    """``/v1/resource_providers/{uuid}``."""

    def __init__(self, uuid):
        self.uuid = uuid
        self.inventories = InventoriesController(uuid)
        self.aggregates = AggregatesController(uuid)
        self.traits = TraitsController(uuid)
        self.usages = UsagesController(uuid)
        self.allocations = AllocationsController(uuid)

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        return _view(providers.get(policy.authorized_context(rules.READ),
                                   self.uuid))

    @index.when(method='DELETE')
    def delete(self):
        providers.delete(_writable(policy.authorized_context(rules.WRITE),
                                   'resource providers'), self.uuid)
        return webob.Response(status=204)


class ResourceProvidersController:
    """``/v1/resource_providers``."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        context = policy.authorized_context(rules.READ)
        found = providers.get_all(
            context, **query.values(schema.GET_RESOURCE_PROVIDERS))
        return {'resource_providers': [_view(p) for p in found]}

    @index.when(method='POST', template='json')
    def post(self):
        context = _writable(policy.authorized_context(rules.WRITE),
                            'resource providers')
        data = validation.json_body(schema.POST_RESOURCE_PROVIDER)
        provider = providers.create(
            context, data['name'], uuid=data.get('uuid'),
            parent_provider_uuid=data.get('parent_provider_uuid'))
        pecan.response.location = _url(provider.uuid)
        return _view(provider)

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        return ResourceProviderController(uuid), remainder
