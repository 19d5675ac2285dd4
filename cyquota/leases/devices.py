"""The lease device schedule: devices chosen and promised to leases for
their windows (a ``Choice``, which ``records`` stores), and held by a
lease while it is active.

A lease holds, on each chosen provider, an amount of a resource class for
``[start, end)`` (``lease_allocations``). At every instant, what ordinary
consumers hold on a provider plus the lease allocations whose window
contains the instant stay within its capacity:

* a lease's devices are chosen for its window: a provider has room for
  ``capacity - ordinary - peak`` where ``ordinary`` is what it holds now
  for other consumers than active leases (open-ended) and ``peak`` the most
  that other live lease allocations on it hold at one instant of the
  window;
* an ordinary claim keeps room for the peak of pending lease allocations
  from now on (``capacity.Capacity.promised``);
* an active lease also holds ``device_allocations`` rows with the lease
  as the consumer, so that device usages show it.

Concurrency: choosing reads without locks, each provider with its
generation first; the caller then writes against those generations, as a
claim does (``allocations``): ``take`` moves them on where they are
unchanged, which locks the providers, and raises
``allocations.AllocationRaced`` (a deadlock: the whole transaction is
retried) where one moved, as whatever takes room on a provider (a claim,
a promise, a lease that starts or is extended, an inventory) moves its
generation. An active lease keeps its devices: ``check`` locks them
and reads again whether they hold a new end; when it grows, ``choose``
takes the rest around them (``kept``) and ``hold`` allocates it at once.
"""

import collections
import dataclasses
import typing

import sqlalchemy as sa

from cyquota.db import models
from cyquota.db import placement_models
from cyquota.lease_tables import calendar
from cyquota.lease_tables import overlaps as overlaps_mod
from cyquota.placement import allocations
from cyquota.placement import capacity
from cyquota.placement import device_errors
from cyquota.placement import device_pages
from cyquota.placement import pools
from cyquota.placement import providers

_device_allocations = placement_models.DeviceAllocation.__table__
_consumers = placement_models.DeviceConsumer.__table__
_rp = placement_models.ResourceProvider.__table__


class Choice(typing.NamedTuple):
    """Devices chosen for a lease (``choose``).

    :ivar parts: ``{need key: [(provider_id, resource_class, amount)]}``.
    :ivar generations: ``{provider_id: generation}`` of the chosen
        providers, as read before anything the choice rests on.
    :ivar names: ``{provider_id: (uuid, name, root uuid)}`` of the chosen
        providers.
    """

    parts: dict
    generations: dict
    names: dict


@dataclasses.dataclass(frozen=True)
class DeviceNeed:
    """What one lease reservation asks of devices.

    :ivar key: the caller's name for it (the lease reservation's id).
    :ivar member_of: a parsed ``member_of.MemberOf``; as for an unnumbered
        request group, the provider or its root must meet it.
    :ivar member_key: a lease-pool key, or None.
    """

    key: str
    resource_class: str
    amount: int
    member_of: object
    member_key: typing.Optional[str] = None


def _room(records, held, start, end, exclude_lease, kept=None):
    """``{(provider_id, rc): amount}`` free over ``[start, end)`` in the
    inventory ``records`` already read, ``held`` their overlapping lease
    windows (``overlaps.Overlaps.devices``' answer), less ``kept``
    (``{(provider_id, rc): amount}`` held over all of it)."""
    kept = kept or {}
    result = {}
    for key, record in records.items():
        active = 0
        windows = []
        for lease_id, window in held.get(key, ()):
            if not window.pending:
                # Counted in ``used`` too, through its device allocations.
                active += window.amount
            if lease_id != exclude_lease:
                windows.append(window)
        ordinary = record.used - active
        others = calendar.peak(windows, start, end)
        result[key] = max(
            0, record.capacity - ordinary - others - kept.get(key, 0))
    return result


def _eligible(session, needs, rules, page):
    """``{need key: [provider_id]}``: the providers of ``page`` (in id
    order) that each need's ``member_of`` and its lease-pool rule allow:
    ``rules`` by member key, or None where no need carries a key (every
    pool is forbidden: the page holds who is outside them all); read at
    once for every need, nothing read when no need is constrained
    further."""
    if rules is None:
        provider_ids = sorted(page.outside)
        rules = collections.defaultdict(pools.PoolRule)
    else:
        provider_ids = sorted(page.generations)
    if not any(rules[need.member_key] or need.member_of for need in needs):
        return {need.key: provider_ids for need in needs}
    roots = dict(session.execute(
        sa.select(_rp.c.id, _rp.c.root_provider_id)
        .where(_rp.c.id.in_(provider_ids))).all())
    aggs = providers.aggregates_of(session, set(roots) | set(roots.values()))
    allowed = {}
    for need in needs:
        rule, member_of = rules[need.member_key], need.member_of
        allowed[need.key] = [
            provider_id for provider_id in sorted(roots)
            if _allows(rule, member_of, aggs.get(provider_id, frozenset()),
                       aggs.get(roots[provider_id], frozenset()))]
    return allowed


def _allows(rule, member_of, own, tree):
    return (rule.allows(own, tree) and not member_of.forbids(own)
            and not member_of.forbids(tree)
            and (member_of.required_by(own) or member_of.required_by(tree)))


def choose(session, needs, start, end, carrier, exclude_lease=None,
           overlaps=None, kept=None):
    """Devices for every ``DeviceNeed`` over ``[start, end)``: ``{need key:
    [(provider_id, resource_class, amount)]}``, taking providers in id
    order and splitting an amount over several when one has too little
    (each part at most the inventory's ``max_unit``, less what ``kept``
    holds there). ``carrier`` (a ``pools.Carrier``) carries the needs'
    member keys.

    Providers are read a page at a time, every need served from one page
    before the next is read, which takes the same devices as reading them
    all: a fixed number of queries while the first page has room, however
    many devices and reservations there are (and of windows: only the
    page's providers' are read). The first page's windows are asked of
    ``overlaps`` (an ``overlaps.Overlaps``, default a new one), read with
    what else it was asked. ``kept``: ``{(provider_id, rc): amount}`` that
    the lease ``exclude_lease`` keeps over the whole window (an active
    lease that grows), room the choice leaves to it.

    :returns: a ``Choice``.
    :raises NoValidAllocation: (409) not enough room.
    """
    # Keyless needs (the common case) leave the pools out in the page read.
    rules = None
    if any(need.member_key for need in needs):
        rules = pools.rules_for(
            session, [need.member_key for need in needs], carrier)
    kept = kept or {}
    left = {need.key: need.amount for need in needs}
    chosen: dict = {need.key: [] for need in needs}
    generations = {}
    names = {}
    overlaps = overlaps or overlaps_mod.Overlaps(session)
    for page in device_pages.pages(
            session, {need.resource_class for need in needs},
            sum(need.amount for need in needs)):
        held = overlaps.devices({rc for _p, rc in page.limits}, start, end,
                                {p for p, _rc in page.limits}).windows()
        free = _room(page.limits, held, start, end, exclude_lease, kept)
        eligible = _eligible(session, needs, rules, page)
        for need in needs:
            for provider_id in eligible[need.key]:
                key = (provider_id, need.resource_class)
                if not left[need.key]:
                    break
                if key not in free:
                    continue
                # With what the lease keeps there: Placement takes its
                # parts on one device as one allocation.
                part = min(left[need.key], free[key],
                           page.limits[key].max_unit - kept.get(key, 0))
                if part > 0:
                    chosen[need.key].append(
                        (provider_id, need.resource_class, part))
                    generations[provider_id] = page.generations[
                        provider_id]
                    names[provider_id] = page.names[provider_id]
                    free[key] -= part
                    left[need.key] -= part
        if not any(left.values()):
            # Served: the next page is not read.
            break
    for need in needs:
        if left[need.key]:
            raise _no_room(need, start, end)
    return Choice(chosen, generations, names)


def _no_room(need, start, end):
    return device_errors.NoValidAllocation(reason=(
        'no providers have room for %s:%d from %s to %s within the '
        'requested aggregates' % (need.resource_class, need.amount,
                                  calendar.isotime(start),
                                  calendar.isotime(end))))


def check_carried(session, needs, held, carrier, start, end):
    """Refuse the devices ``held`` (``{need key: [(provider_id, rc,
    amount)]}``, an active lease's) of a need whose member key ``carrier``
    may not carry now, or whose pool no longer holds them: the
    NoValidAllocation (409) ``choose`` gives over ``[start, end)`` for a
    key no aggregate holds, so that a revoked key tells nothing of its
    pool. Reads nothing when no need carries a key."""
    keyed = [need for need in needs if need.member_key and held.get(need.key)]
    if not keyed:
        return
    rules = pools.rules_for(session, [need.member_key for need in keyed],
                            carrier)
    roots = dict(session.execute(
        sa.select(_rp.c.id, _rp.c.root_provider_id).where(_rp.c.id.in_(
            sorted({part[0] for need in keyed for part in held[need.key]})))
    ).all())
    aggs = providers.aggregates_of(session, set(roots) | set(roots.values()))
    for need in keyed:
        rule = rules[need.member_key]
        if not all(rule.allows(aggs.get(provider_id, frozenset()),
                               aggs.get(roots[provider_id], frozenset()))
                   for provider_id, _rc, _n in held[need.key]):
            raise _no_room(need, start, end)


def take(batch, choice):
    """Lock the providers of ``choice`` by moving their generations on,
    where they are still at what the choice read: a write of ``batch``
    (a ``write_batch.WriteBatch``), which raises AllocationRaced (retry
    the transaction) where one moved."""
    if choice.generations:
        providers.batch_bump_if_unchanged(batch, choice.generations,
                                          allocations.AllocationRaced)


def check(session, held, start, end, exclude_lease):
    """Lock the providers of an active lease's devices ``held`` (id
    order) and check, reading under the locks, that they hold the lease
    over ``[start, end)``; NoValidAllocation (409) when they do not."""
    needs: collections.Counter = collections.Counter()
    for parts in held.values():
        for provider_id, rc, amount in parts:
            needs[(provider_id, rc)] += amount
    providers.lock_ids(session, {key[0] for key in needs})
    records = capacity.load(session, provider_ids={p for p, _rc in needs},
                            resource_classes={rc for _p, rc in needs},
                            lock=True, promised=False)
    held = overlaps_mod.device_windows(session, {rc for _p, rc in records},
                                   start, end, {p for p, _rc in records})
    free = _room(records, held, start, end, exclude_lease)
    for (provider_id, rc), amount in sorted(needs.items()):
        if free.get((provider_id, rc), 0) < amount:
            raise device_errors.NoValidAllocation(reason=(
                'the devices of the lease have no room for %s:%d until '
                '%s' % (rc, amount, calendar.isotime(end))))


def hold(batch, lease_id, chosen):
    """An active lease that grows holds the devices ``chosen`` for it
    (promised, their providers taken) at once: device allocations of the
    lease, writes of ``batch``."""
    now = models.utcnow()
    batch.insert(_device_allocations, [
        dict(resource_provider_id=provider_id, consumer_id=lease_id,
             resource_class=rc, used=amount, created_at=now)
        for _key, parts in sorted(chosen.items())
        for provider_id, rc, amount in parts])


def retake(session, held):
    """An active lease's window moves (checked by the caller, ``check``,
    its devices ``held`` locked): their providers' generations move on,
    as a longer window takes room."""
    provider_ids = {provider_id for parts in held.values()
                    for provider_id, _rc, _n in parts}
    if provider_ids:
        providers.bump(session, provider_ids)


def activate(session, lease_id, project_id, user_id=None, held=None):
    """The lease starts: its device parts (``held``, ``{lease reservation
    id: [(provider_id, rc, amount)]}``, where the caller has them; else
    read) become device allocations of the lease (under the providers'
    locks)."""
    if held is None:
        held = calendar.lease_devices(session, [lease_id])
    else:
        held = dict(sorted(held.items()))  # As ``records`` stored them.
    parts = [part for found in held.values() for part in found]
    providers.lock_ids(session, {provider_id for provider_id, _rc, _n
                                 in parts})
    session.execute(_consumers.insert().values(
        consumer_id=lease_id, project_id=project_id, user_id=user_id,
        created_at=models.utcnow()))
    if parts:
        session.execute(_device_allocations.insert(), [
            dict(resource_provider_id=provider_id, consumer_id=lease_id,
                 resource_class=rc, used=amount, created_at=models.utcnow())
            for provider_id, rc, amount in parts])
        providers.bump(session, {part[0] for part in parts})


def release(context, lease_id):
    """The lease ends: its device allocations are freed (its device parts
    stay, the history ``records.end`` keeps)."""
    allocations.free(context, lease_id)


def names(session, provider_ids):
    """``{provider_id: (uuid, name, root uuid)}``."""
    root = _rp.alias('root')
    return {row.id: (row.uuid, row.name, row.root_uuid)
            for row in session.execute(
                sa.select(_rp.c.id, _rp.c.uuid, _rp.c.name,
                          root.c.uuid.label('root_uuid'))
                .join(root, root.c.id == _rp.c.root_provider_id)
                .where(_rp.c.id.in_(sorted(set(provider_ids)))))}
