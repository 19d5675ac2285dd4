"""How much room a provider has for a resource class.

capacity = int((total - reserved) * allocation_ratio); a request of
``amount`` fits when ``min_unit <= amount <= max_unit``, ``amount`` is a
multiple of ``step_size`` and ``used + promised + amount <= capacity``:
Placement's rule, with room kept for what leases are promised on the
provider (``promised``: the peak, from now on, of pending lease
allocations; see ``cyquota.leases.devices``).
"""

import collections
import dataclasses

import sqlalchemy as sa

from cyquota.db import placement_models
from cyquota.lease_tables import calendar

_inventories = placement_models.Inventory.__table__
_allocations = placement_models.DeviceAllocation.__table__

#: SQL: what is allocated of an inventory row's class on its provider (a
#: column for a statement over ``provider_inventories``).
USED = (sa.select(sa.func.coalesce(sa.func.sum(_allocations.c.used), 0))
        .where(_allocations.c.resource_provider_id
               == _inventories.c.resource_provider_id,
               _allocations.c.resource_class
               == _inventories.c.resource_class)
        .correlate_except(_allocations).scalar_subquery())


_INVENTORY = (_inventories.c.resource_provider_id.label('provider_id'),
              _inventories.c.resource_class, _inventories.c.total,
              _inventories.c.reserved, _inventories.c.min_unit,
              _inventories.c.max_unit, _inventories.c.step_size,
              _inventories.c.allocation_ratio)
_USED = USED.label('used')
#: The columns of a ``Capacity`` without ``promised``, for a statement
#: over ``provider_inventories`` (``keyed`` reads them back).
COLUMNS = _INVENTORY + (_USED,)


@dataclasses.dataclass(frozen=True)
class Capacity:
    """One inventory record of a provider and what is allocated from it."""

    provider_id: int
    resource_class: str
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int = 0
    promised: int = 0

    @property
    def capacity(self):
        return int((self.total - self.reserved) * self.allocation_ratio)

    def fits(self, amount):
        """Whether one more allocation of ``amount`` fits."""
        return (self.min_unit <= amount <= self.max_unit
                and amount % self.step_size == 0
                and self.used + self.promised + amount <= self.capacity)

    def fits_total(self, amount):
        """Whether ``amount`` more, summed over several request groups,
        fits (min_unit and step_size apply to each group's own amount)."""
        return (amount <= self.max_unit
                and self.used + self.promised + amount <= self.capacity)


def keyed(row):
    """``((provider_id, resource_class), Capacity)`` of a row holding
    ``COLUMNS`` (and maybe others)."""
    fields = {column.name: row._mapping[column.name] for column in COLUMNS}
    fields['used'] = int(fields['used'])
    return (fields['provider_id'], fields['resource_class']), Capacity(
        **fields)


def load(session, provider_ids=None, resource_classes=None, lock=False,
         promised=True):
    """``{(provider_id, resource_class): Capacity}`` for the inventories of
    ``provider_ids`` (default all) in ``resource_classes`` (default all).

    :param lock: read with shared locks, so that (under MySQL's REPEATABLE
        READ too) the rows read are the latest committed ones; used after
        the providers themselves are locked.
    :param promised: also read the pending lease allocations' peaks
        (``Capacity.promised``); a window's room counts leases itself.
    """
    inv_query = _of(sa.select(*_INVENTORY), _inventories, provider_ids,
                    resource_classes)
    if lock:
        records = _locked(session, inv_query, provider_ids,
                          resource_classes)
    else:
        # One statement: each row's allocations summed beside it.
        records = dict(keyed(row) for row in session.execute(
            inv_query.add_columns(_USED)))
    if not promised:
        return records
    peaks = calendar.device_promised(session, {key[0] for key in records})
    return {key: dataclasses.replace(record, promised=peaks[key])
            if key in peaks else record
            for key, record in records.items()}


def _of(query, table, provider_ids, resource_classes):
    """``query`` of ``table``'s rows limited to ``provider_ids`` and
    ``resource_classes`` (None: all)."""
    if provider_ids is not None:
        query = query.where(
            table.c.resource_provider_id.in_(sorted(set(provider_ids))))
    if resource_classes is not None:
        query = query.where(table.c.resource_class.in_(set(resource_classes)))
    return query


def _locked(session, inv_query, provider_ids, resource_classes):
    """``load``'s records read with shared locks, the allocations in a
    statement of their own: locking reads cannot aggregate (PostgreSQL),
    so the rows are summed here."""
    used_query = _of(sa.select(_allocations.c.resource_provider_id,
                               _allocations.c.resource_class,
                               _allocations.c.used),
                     _allocations, provider_ids, resource_classes)
    used = collections.Counter()
    for provider_id, rc, amount in session.execute(
            used_query.with_for_update(read=True)):
        used[provider_id, rc] += amount
    return {(row.provider_id, row.resource_class): Capacity(
                used=used[row.provider_id, row.resource_class],
                **row._mapping)
            for row in session.execute(inv_query.with_for_update(read=True))}


def providers_with_room(session, resources):
    """Ids of providers with room for every ``{rc: amount}`` at once."""
    records = load(session, resource_classes=list(resources))
    room = None
    for rc, amount in resources.items():
        fits = {provider_id for (provider_id, inv_rc), record
                in records.items() if inv_rc == rc and record.fits(amount)}
        room = fits if room is None else room & fits
    return room or set()
