"""What the Placement mirror copies, read from the cloud's Placement.

The providers with inventory of a mapped class (the Placement class of a
resource cyquota counts, ``[placement] class_map``) and their ancestors up
to the root, as :class:`cyquota.cloud.mirror_diff.Provider` values:
inventories of mapped classes in cyquota's resource names, aggregates,
traits, and what each consumer holds of them. An ancestor is copied for
its place in the tree and its aggregates (a root's aggregates span its
tree in ``member_of``), without inventory.
"""

from cyquota.cloud import class_map as class_map_mod
from cyquota.cloud import mirror_diff
from cyquota.placement import inventories as inventory_fields
from cyquota.quota import resources as quota_resources


def mapped_classes(conf):
    """``{placement class: cyquota resource}`` of every counted
    resource."""
    classes = class_map_mod.from_conf(conf)
    return {classes.to_placement(resource): resource
            for resource in quota_resources.known_resources()}


def _inventories(found, mapped):
    return {mapped[rc]: {field: (float(fields[field])
                                 if field == 'allocation_ratio'
                                 else int(fields[field]))
                         for field in inventory_fields.FIELDS}
            for rc, fields in found.items() if rc in mapped}


def _usage(found, mapped):
    usage = {}
    for consumer, held in found.items():
        for rc, amount in held['resources'].items():
            if rc in mapped and amount:
                usage[(consumer, mapped[rc])] = int(amount)
    return usage


def read(client, mapped):
    """``{uuid: Provider}`` of what Placement has now.

    :param client: a ``PlacementClient``.
    :param mapped: ``{placement class: cyquota resource}``.
    :raises cyquota.cloud.placement_errors.PlacementError: a read failed.
    """
    listed = {rp['uuid']: rp for rp in client.resource_providers()}
    inventories = {}
    for uuid in sorted(listed):
        found = _inventories(client.inventories(uuid)['inventories'], mapped)
        if found:
            inventories[uuid] = found
    wanted = set()
    for uuid in inventories:
        while uuid is not None and uuid in listed and uuid not in wanted:
            wanted.add(uuid)
            uuid = listed[uuid]['parent_provider_uuid']
    providers = {}
    for uuid in sorted(wanted):
        rp = listed[uuid]
        usage = {}
        if uuid in inventories:
            usage = _usage(client.provider_allocations(uuid)['allocations'],
                           mapped)
        providers[uuid] = mirror_diff.Provider(
            uuid=uuid, name=rp['name'],
            parent_uuid=rp['parent_provider_uuid'],
            root_uuid=rp['root_provider_uuid'],
            inventories=inventories.get(uuid, {}),
            aggregates=frozenset(client.aggregates(uuid)['aggregates']),
            traits=frozenset(client.traits(uuid)['traits']),
            usage=usage)
    return providers
