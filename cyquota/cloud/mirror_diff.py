"""What one sync of the Placement mirror changes: the pure comparison of
Placement's providers with cyquota's copy of them.

Both sides are ``{uuid: Provider}``. :func:`diff` returns the
:class:`Changes` that make cyquota's copy equal to Placement's; it reads
nothing and writes nothing, so it is tested on plain values.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Provider:
    """One provider as the mirror compares it.

    :ivar inventories: ``{resource: {total, reserved, min_unit, max_unit,
        step_size, allocation_ratio}}``, in cyquota's resource names.
    :ivar usage: ``{(consumer, resource): amount}`` of the consumers that
        are not cyquota's own (Nova's servers, say).
    """

    uuid: str
    name: str
    parent_uuid: str = None
    root_uuid: str = None
    inventories: dict = dataclasses.field(default_factory=dict)
    aggregates: frozenset = frozenset()
    traits: frozenset = frozenset()
    usage: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Changes:
    """What a sync does, per provider uuid.

    :ivar added: new providers, parents before their children.
    :ivar moved: ``{uuid: (name, parent uuid, root uuid)}`` of providers
        renamed or moved in their tree.
    :ivar removed: providers gone from Placement, children first (a sync
        may keep some of them: see ``cyquota.cloud.mirror``).
    :ivar inventories: ``{uuid: ({resource: fields} set, [resource]
        removed)}``.
    :ivar aggregates, traits: ``{uuid: (added set, removed set)}``.
    :ivar usage: ``{uuid: ({(consumer, resource): amount} set,
        [(consumer, resource)] removed)}``.
    """

    added: list = dataclasses.field(default_factory=list)
    moved: dict = dataclasses.field(default_factory=dict)
    removed: list = dataclasses.field(default_factory=list)
    inventories: dict = dataclasses.field(default_factory=dict)
    aggregates: dict = dataclasses.field(default_factory=dict)
    traits: dict = dataclasses.field(default_factory=dict)
    usage: dict = dataclasses.field(default_factory=dict)

    def __bool__(self):
        return any(dataclasses.astuple(self))

    def touched(self):
        """Uuids whose inventories, aggregates, traits or usage change
        (their generation is bumped)."""
        return (set(self.inventories) | set(self.aggregates)
                | set(self.traits) | set(self.usage))


def _depth(providers, uuid):
    depth = 0
    parent = providers[uuid].parent_uuid
    while parent is not None and parent in providers and depth < 64:
        depth += 1
        parent = providers[parent].parent_uuid
    return depth


def _sets(wanted, current):
    added, removed = set(wanted) - set(current), set(current) - set(wanted)
    return (added, removed) if added or removed else None


def _dicts(wanted, current):
    changed = {key: value for key, value in wanted.items()
               if current.get(key) != value}
    removed = sorted(set(current) - set(wanted))
    return (changed, removed) if changed or removed else None


def diff(placement, current):
    """The :class:`Changes` that turn ``current`` (cyquota's copy) into
    ``placement`` (what Placement has now)."""
    changes = Changes()
    changes.added = sorted(set(placement) - set(current),
                           key=lambda uuid: (_depth(placement, uuid), uuid))
    changes.removed = sorted(set(current) - set(placement),
                             key=lambda uuid: (-_depth(current, uuid), uuid))
    empty = Provider(uuid=None, name=None)
    for uuid, wanted in placement.items():
        have = current.get(uuid, empty)
        shape = (wanted.name, wanted.parent_uuid, wanted.root_uuid)
        if uuid in current and shape != (have.name, have.parent_uuid,
                                         have.root_uuid):
            changes.moved[uuid] = shape
        for name, compare in (('inventories', _dicts),
                              ('aggregates', _sets), ('traits', _sets),
                              ('usage', _dicts)):
            found = compare(getattr(wanted, name), getattr(have, name))
            if found:
                getattr(changes, name)[uuid] = found
    for uuid in changes.removed:
        # A provider that goes loses what Placement showed on it; what
        # cyquota's own consumers hold is the caller's to keep.
        if current[uuid].usage:
            changes.usage[uuid] = ({}, sorted(current[uuid].usage))
    return changes


def summary_rows(changes, kept=()):
    """``[(change, count)]`` of ``changes`` for a one-table summary;
    ``kept`` are the removed uuids the sync kept."""
    kept = set(kept)

    def items(per_provider):
        return sum(len(first) + len(second)
                   for first, second in per_provider.values())
    return [
        ('providers added', len(changes.added)),
        ('providers updated', len(changes.moved)),
        ('providers removed', len(set(changes.removed) - kept)),
        ('providers kept (held)', len(kept)),
        ('inventory changes', items(changes.inventories)),
        ('aggregate membership changes', items(changes.aggregates)),
        ('trait changes', items(changes.traits)),
        ('usage changes', items(changes.usage)),
    ]


def without_consumers(providers, own):
    """``providers`` without the usage of the consumers in ``own``
    (cyquota's own leases and claims, which cyquota already counts)."""
    return {uuid: dataclasses.replace(provider, usage={
        key: amount for key, amount in provider.usage.items()
        if key[0] not in own})
        for uuid, provider in providers.items()}
