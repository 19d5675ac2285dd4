"""What the Placement mirror copies, read from the cloud's Placement.

The providers with inventory of a mapped class (the Placement class of a
resource cyquota counts, ``[placement] class_map``) and their ancestors up
to the root, as :class:`cyquota.cloud.mirror_diff.Provider` values:
inventories of mapped classes in cyquota's resource names, aggregates,
traits, and what each consumer holds of them. An ancestor is copied for
its place in the tree and its aggregates (a root's aggregates span its
tree in ``member_of``), without inventory.

A read is incremental. Placement bumps a provider's generation (listed by
the one ``GET /resource_providers``) on every change of its inventories,
aggregates and traits and on every allocation that puts an amount on it,
so a provider whose generation is the one the last sync recorded (``seen``)
is what cyquota's copy of it says, with one exception: allocations deleted
(or moved to another provider) do not bump it. A read therefore asks
Placement about the providers that are new or whose generation moved, and
the allocations of those unchanged ones that held some at the last read;
everything else comes from the copy. With nothing recorded (``seen``
empty) everything is read.
"""

import collections
import dataclasses

from cyquota.cloud import mirror_diff
from cyquota.placement import inventories as inventory_fields
from cyquota.quota import resources as quota_resources
from cyquota import resource_classes


#: What the copy has of a provider it does not have.
_NOTHING = mirror_diff.Provider(uuid=None, name=None)


class Overtaken(Exception):
    """Another sync recorded generations after this one read: what it read
    is not enough to complete the copy."""


@dataclasses.dataclass
class Reading:
    """What one sync read of Placement.

    :ivar listed: ``{uuid: provider}`` as ``GET /resource_providers``
        lists them (``name``, ``generation``, parent and root uuids).
    :ivar inventories: ``{uuid: {resource: fields}}`` of mapped classes, of
        every provider whose inventories were read.
    :ivar aggregates, traits: ``{uuid: frozenset}`` of those read.
    :ivar usage: ``{uuid: {(consumer, resource): amount}}`` of every
        consumer, of the providers whose allocations were read.
    """

    listed: dict
    inventories: dict = dataclasses.field(default_factory=dict)
    aggregates: dict = dataclasses.field(default_factory=dict)
    traits: dict = dataclasses.field(default_factory=dict)
    usage: dict = dataclasses.field(default_factory=dict)

    def requests(self):
        """How many requests the reading took."""
        return 1 + sum(len(found) for found in (
            self.inventories, self.aggregates, self.traits, self.usage))


def mapped_classes(conf):
    """``{placement class: cyquota resource}`` of every counted
    resource."""
    classes = resource_classes.class_map(conf)
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


def _stale(listed, seen):
    """Uuids that are new or whose generation is not the recorded one."""
    return {uuid for uuid, rp in listed.items()
            if uuid not in seen or seen[uuid][0] != rp['generation']}


class Needs(collections.namedtuple('Needs', (
        'stale', 'inventoried', 'wanted', 'details', 'allocations'))):
    """What a copy of the listed providers needs, as sets of uuids: whose
    inventories must be read (``stale``), which have mapped inventory,
    which are copied (``wanted``: those and their ancestors), whose
    aggregates and traits must be read, whose allocations must be read."""


def _needs(listed, seen, copy, inventories):
    """The :class:`Needs` of a copy of ``listed``, given the generations
    ``seen``, the ``copy`` as of them and the ``inventories`` read."""
    stale = _stale(listed, seen)
    inventoried = {uuid for uuid in listed if (
        inventories[uuid] if uuid in inventories
        else copy[uuid].inventories if uuid in copy else None)}
    wanted = set()
    for uuid in inventoried:
        while uuid is not None and uuid in listed and uuid not in wanted:
            wanted.add(uuid)
            uuid = listed[uuid]['parent_provider_uuid']
    details = {uuid for uuid in wanted if uuid in stale or uuid not in copy}
    # Only where it held some can an allocation have been deleted unseen.
    allocations = {uuid for uuid in wanted & inventoried
                   if uuid in details or seen[uuid][1]}
    return Needs(stale, inventoried, wanted, details, allocations)


def _read_or_copied(read, uuid, have, name):
    """``read[uuid]`` when it was read, else what the copy ``have`` has."""
    return read[uuid] if uuid in read else getattr(have, name)


def read(client, mapped, seen=None, copy=None):
    """What Placement has now that ``copy`` may not.

    :param client: a ``PlacementClient``.
    :param mapped: ``{placement class: cyquota resource}``.
    :param seen: ``{uuid: (generation, allocated)}`` recorded by the last
        sync (None or empty: read everything).
    :param copy: ``{uuid: Provider}``, cyquota's copy of the providers
        Placement listed at that sync.
    :returns: a :class:`Reading`.
    :raises cyquota.cloud.placement_errors.PlacementError: a read failed.
    """
    seen, copy = seen or {}, copy or {}
    reading = Reading({rp['uuid']: rp for rp in client.resource_providers()})
    for uuid in sorted(_stale(reading.listed, seen)):
        reading.inventories[uuid] = _inventories(
            client.inventories(uuid)['inventories'], mapped)
    needs = _needs(reading.listed, seen, copy, reading.inventories)
    for uuid in sorted(needs.details):
        reading.aggregates[uuid] = frozenset(
            client.aggregates(uuid)['aggregates'])
        reading.traits[uuid] = frozenset(client.traits(uuid)['traits'])
    for uuid in sorted(needs.allocations):
        reading.usage[uuid] = _usage(
            client.provider_allocations(uuid)['allocations'], mapped)
    return reading


def providers(reading, seen, copy):
    """Placement's providers as a full read would find them, from
    ``reading`` and, for what it did not read, ``copy``.

    :param seen: the generations recorded now (by this or another sync).
    :param copy: cyquota's copy as of ``seen``.
    :returns: ``({uuid: Provider}, {uuid: (generation, allocated)})``: the
        providers to copy, and what to record of every provider listed.
    :raises Overtaken: another sync recorded meanwhile, so that
        ``reading`` lacks something.
    """
    listed = reading.listed
    needs = _needs(listed, seen, copy, reading.inventories)
    if (needs.stale - set(reading.inventories)
            or needs.details - set(reading.aggregates)
            or needs.allocations - set(reading.usage)):
        raise Overtaken()
    found = {}
    for uuid in sorted(needs.wanted):
        rp, have = listed[uuid], copy.get(uuid, _NOTHING)
        found[uuid] = mirror_diff.Provider(
            uuid=uuid, name=rp['name'],
            parent_uuid=rp['parent_provider_uuid'],
            root_uuid=rp['root_provider_uuid'],
            inventories=_read_or_copied(reading.inventories, uuid, have,
                                        'inventories'),
            aggregates=_read_or_copied(reading.aggregates, uuid, have,
                                       'aggregates'),
            traits=_read_or_copied(reading.traits, uuid, have, 'traits'),
            # Unread: it held nothing at the last read, and a new holding
            # would have moved its generation.
            usage=(reading.usage.get(uuid, {})
                   if uuid in needs.inventoried else {}))
    record = {uuid: (rp['generation'], uuid in needs.inventoried
                     and bool(reading.usage.get(uuid)))
              for uuid, rp in listed.items()}
    return found, record
