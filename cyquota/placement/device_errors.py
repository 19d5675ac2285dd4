"""The errors of the device store (Placement-style resource providers,
their inventories, aggregates, traits and device allocations), as
Placement names them: each a ``cyquota.exception`` error (its HTTP status,
its ``cyquota.<kind>`` code), rebuilt as itself on the far side of RPC
(``cyquota.conductor.rpc.ALLOWED_EXMODS``)."""

from cyquota import exception


class ResourceClassNotFound(exception.Invalid):
    msg_fmt = 'No such resource class %(name)s.'
    kind = 'unknown_resource_class'


class TraitNotFound(exception.Invalid):
    msg_fmt = 'No such trait(s): %(names)s.'
    kind = 'unknown_trait'


class InvalidInventory(exception.Invalid):
    msg_fmt = ("Invalid inventory for '%(resource_class)s' on resource "
               "provider '%(uuid)s': %(reason)s")
    kind = 'invalid_inventory'


class InvalidParentProvider(exception.Invalid):
    msg_fmt = ('Unable to create resource provider "%(name)s", %(uuid)s: '
               '%(reason)s')
    kind = 'invalid_parent_provider'


class ResourceProviderNotFound(exception.NotFound):
    msg_fmt = 'No resource provider with uuid %(uuid)s found'
    kind = 'resource_provider_not_found'


class AggregateNotFound(exception.NotFound):
    msg_fmt = 'No aggregate with uuid %(uuid)s found'
    kind = 'aggregate_not_found'


class ResourceProviderExists(exception.Conflict):
    msg_fmt = 'Conflicting resource provider %(duplicate)s already exists.'
    kind = 'duplicate_name'


class ConcurrentUpdate(exception.Conflict):
    msg_fmt = ('resource provider generation conflict: resource provider '
               '%(uuid)s is at generation %(current)s, the request gave '
               '%(given)s. Read the provider again and retry.')
    kind = 'concurrent_update'


class InventoryInUse(exception.Conflict):
    msg_fmt = ("update conflict: Inventory for '%(resource_classes)s' on "
               "resource provider '%(uuid)s' in use.")
    kind = 'inventory_in_use'


class ResourceProviderInUse(exception.Conflict):
    msg_fmt = 'Unable to delete resource provider %(uuid)s: %(reason)s'
    kind = 'provider_in_use'


class AggregateInUse(exception.Conflict):
    msg_fmt = ('Unable to delete aggregate %(uuid)s: resource providers '
               '%(providers)s are members of it.')
    kind = 'aggregate_in_use'


class ConsumerExists(exception.Conflict):
    msg_fmt = ("Consumer '%(consumer_id)s' already holds device "
               "allocations; free them before claiming again.")
    kind = 'consumer_exists'


class NoValidAllocation(exception.Conflict):
    msg_fmt = 'No devices can satisfy the request: %(reason)s'
    kind = 'no_valid_allocation'


class ManagedByPlacement(exception.Conflict):
    msg_fmt = ("Devices are copied from the cloud's Placement ([placement] "
               "source = placement): change %(what)s there; cyquota's copy "
               "follows at the next sync.")
    kind = 'managed_by_placement'
