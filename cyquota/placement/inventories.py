"""A provider's inventories: what it offers, per resource class."""

import sqlalchemy as sa

from cyquota.db import placement_models
from cyquota.placement import device_errors
from cyquota.placement import providers
from cyquota.placement import resource_classes

MAX_INT = 2 ** 31 - 1
FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')
DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': MAX_INT,
            'step_size': 1, 'allocation_ratio': 1.0}

_inventories = placement_models.Inventory.__table__
_allocations = placement_models.DeviceAllocation.__table__


def _read(session, provider_id):
    rows = session.execute(
        sa.select(_inventories).where(
            _inventories.c.resource_provider_id == provider_id)
        .order_by(_inventories.c.resource_class))
    return {row.resource_class: {field: getattr(row, field)
                                 for field in FIELDS} for row in rows}


def get_all(context, uuid):
    """``(generation, {rc: {total, reserved, ...}})`` of provider ``uuid``."""
    return providers.read(context, uuid, _read)


def _validated(uuid, rc, fields):
    resource_classes.check(rc)
    inventory = dict(DEFAULTS, **fields)
    if inventory['reserved'] > inventory['total']:
        raise device_errors.InvalidInventory(
            resource_class=rc, uuid=uuid,
            reason='The reserved value is greater than total.')
    if inventory['min_unit'] > inventory['max_unit']:
        raise device_errors.InvalidInventory(
            resource_class=rc, uuid=uuid,
            reason='The min_unit value is greater than max_unit.')
    return inventory


def set_all(context, uuid, generation, inventories):
    """Replace every inventory of provider ``uuid``.

    :param generation: the provider generation the caller last saw.
    :param inventories: ``{rc: {total, reserved?, min_unit?, max_unit?,
        step_size?, allocation_ratio?}}``; omitted fields take Placement's
        defaults.
    :returns: ``(new generation, {rc: inventory})``.
    :raises ConcurrentUpdate: (409) stale ``generation``.
    :raises InventoryInUse: (409) a removed resource class has allocations.
    :raises InvalidInventory, ResourceClassNotFound: (400)
    """
    wanted = {rc: _validated(uuid, rc, fields)
              for rc, fields in inventories.items()}

    def replace(session, provider_id):
        existing = _read(session, provider_id)
        removed = sorted(set(existing) - set(wanted))
        if removed:
            in_use = sorted(session.execute(
                sa.select(_allocations.c.resource_class).distinct().where(
                    _allocations.c.resource_provider_id == provider_id,
                    _allocations.c.resource_class.in_(removed))).scalars())
            if in_use:
                raise device_errors.InventoryInUse(
                    resource_classes=', '.join(in_use), uuid=uuid)
            session.execute(_inventories.delete().where(
                _inventories.c.resource_provider_id == provider_id,
                _inventories.c.resource_class.in_(removed)))
        for rc, inventory in wanted.items():
            if rc not in existing:
                session.execute(_inventories.insert().values(
                    resource_provider_id=provider_id, resource_class=rc,
                    **inventory))
            elif existing[rc] != inventory:
                session.execute(_inventories.update().where(
                    _inventories.c.resource_provider_id == provider_id,
                    _inventories.c.resource_class == rc).values(**inventory))

    return providers.write(context, uuid, generation, replace, _read)
