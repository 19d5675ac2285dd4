"""Allocation candidates: the ways a device request can be satisfied.

Placement's search (microversion 1.39), over what one transaction reads:

1. Every request group gets picks, keyed by their *anchor*, the root of
   the tree a pick serves:

   * a numbered group: one provider with room for all the group's
     resources, itself (directly) in the group's ``member_of`` aggregates
     and in none of its forbidden ones;
   * the unnumbered group: per resource class, any provider with room; its
     ``member_of`` holds when the provider *or the anchor* meets it, and a
     forbidden aggregate excludes the provider when either of them is in
     it. A pick takes one such provider per resource class of one tree.

   A sharing provider (trait MISC_SHARES_VIA_AGGREGATE) serves, besides its
   own tree, every tree with a provider in one of its aggregates.
2. The lease-pool rule (``pools``) filters every provider of every pick.
3. For an anchor that every group can serve, each combination of one pick
   per group is a candidate when ``group_policy=isolate`` keeps the
   numbered groups on distinct providers and the summed amounts still fit.
   Combinations are made one at a time, a partial one that already fails
   dropped with all that extend it, and the search stops at the caller's
   ``limit`` or ``[placement] max_allocation_candidates``.

Candidates come in a stable order (anchors, then providers, by creation),
so a claim that takes the first one packs devices in provider order. The
search reads every provider of the requested classes (a ``Snapshot``); a
claim reads them a page of trees at a time (``claim_candidates``), and
the same rules (``from_snapshot``) decide on what either read.
"""

import collections
import dataclasses
import itertools
import random

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import placement_models
from cyquota.placement import capacity
from cyquota.placement import pools
from cyquota.placement import providers
from cyquota.placement import traits

_rp = placement_models.ResourceProvider.__table__
_provider_aggs = placement_models.ProviderAggregate.__table__

_Pick = collections.namedtuple('_Pick', 'amounts providers')


@dataclasses.dataclass(frozen=True)
class AllocationRequest:
    """One candidate, by internal provider id.

    :ivar allocations: ``{provider_id: {resource_class: amount}}``.
    :ivar mappings: ``{group suffix: [provider_id, ...]}``.
    """

    allocations: dict
    mappings: dict


class Snapshot:
    """What the rules read: capacity records of the providers (of the
    requested classes) that may serve, their roots, the anchors each may
    serve, and the aggregates of both.

    :ivar records: ``{(provider_id, rc): capacity.Capacity}``.
    :ivar root: ``{provider_id: root provider id}``.
    :ivar anchors: ``{provider_id: set(anchor ids)}``: its root, and for a
        sharing provider every tree it serves.
    :ivar aggregates: ``{provider_id: frozenset(aggregate uuids)}`` of the
        providers and the anchors.
    """

    def __init__(self, records, root, anchors, aggregates):
        self.records = records
        self.root = root
        self.anchors = anchors
        self.aggregates = aggregates

    @classmethod
    def read(cls, session, resource_classes):
        """Every provider with inventory of ``resource_classes``."""
        records = capacity.load(session, resource_classes=resource_classes)
        provider_ids = {provider_id for provider_id, _rc in records}
        root = dict(session.execute(
            sa.select(_rp.c.id, _rp.c.root_provider_id)
            .where(_rp.c.id.in_(sorted(provider_ids)))).all())
        sharing = traits.sharing_providers(session) & provider_ids
        anchors = {provider_id: {root[provider_id]}
                   for provider_id in provider_ids}
        for provider_id, anchor in sharing_anchors(session, sharing):
            anchors[provider_id].add(anchor)
        involved = set(root.values()).union(*anchors.values())
        return cls(records, root, anchors, providers.aggregates_of(
            session, provider_ids | involved))

    def aggs(self, provider_id):
        return self.aggregates.get(provider_id, frozenset())

    def providers_with_room(self, rc, amount):
        return sorted(provider_id for (provider_id, inv_rc), record
                      in self.records.items()
                      if inv_rc == rc and record.fits(amount))


def sharing_anchors(session, sharing):
    """``(sharing provider id, anchor)`` pairs: the roots of the trees with
    a provider in an aggregate of one of the providers ``sharing``."""
    if not sharing:
        return []
    mine = _provider_aggs.alias('mine')
    other = _provider_aggs.alias('other')
    return session.execute(
        sa.select(mine.c.resource_provider_id, _rp.c.root_provider_id)
        .join(other, other.c.aggregate_id == mine.c.aggregate_id)
        .join(_rp, _rp.c.id == other.c.resource_provider_id)
        .where(mine.c.resource_provider_id.in_(sorted(sharing)))
        .distinct()).all()


def _numbered_picks(snap, group, allowed):
    """``{anchor: [pick]}``: single providers for a numbered group."""
    picks = collections.defaultdict(list)
    candidates = None
    for rc, amount in group.resources.items():
        fits = set(snap.providers_with_room(rc, amount))
        candidates = fits if candidates is None else candidates & fits
    for provider_id in sorted(candidates):
        own = snap.aggs(provider_id)
        if (not group.member_of.required_by(own)
                or group.member_of.forbids(own) or not allowed(provider_id)):
            continue
        pick = _Pick({(provider_id, rc): amount
                      for rc, amount in group.resources.items()},
                     frozenset([provider_id]))
        for anchor in sorted(snap.anchors[provider_id]):
            picks[anchor].append(pick)
    return picks


def _unnumbered_picks(snap, group, allowed):
    """``{anchor: [pick]}``: one provider per resource class, one tree."""
    member_of = group.member_of
    by_rc = {}
    for rc, amount in sorted(group.resources.items()):
        by_anchor = collections.defaultdict(list)
        for provider_id in snap.providers_with_room(rc, amount):
            own = snap.aggs(provider_id)
            if not allowed(provider_id) or member_of.forbids(own):
                continue
            for anchor in sorted(snap.anchors[provider_id]):
                tree = snap.aggs(anchor)
                if member_of.forbids(tree) or not (
                        member_of.required_by(own)
                        or member_of.required_by(tree)):
                    continue
                by_anchor[anchor].append(provider_id)
        by_rc[rc] = by_anchor
    picks = collections.defaultdict(list)
    anchors = set.intersection(*(set(by_anchor) for by_anchor
                                 in by_rc.values()))
    for anchor in sorted(anchors):
        for chosen in itertools.product(*(by_rc[rc][anchor]
                                          for rc in by_rc)):
            picks[anchor].append(_Pick(
                {(provider_id, rc): group.resources[rc]
                 for provider_id, rc in zip(chosen, by_rc)},
                frozenset(chosen)))
    return picks


def iter_allocation_requests(session, request, pool_rule):
    """Generate the request's candidates (AllocationRequest), without
    duplicates, in a stable order, from every provider of its classes."""
    return from_snapshot(Snapshot.read(session, set(request.totals())),
                         request, pool_rule)


def _room(snap, by_anchor, anchor):
    """``{resource_class: units}`` the picks of every group at ``anchor``
    have room for together (each provider counted once)."""
    keys = {key for picks in by_anchor for pick in picks[anchor]
            for key in pick.amounts}
    room = collections.Counter()
    for key in keys:
        record = snap.records[key]
        room[key[1]] += max(0, min(record.max_unit, record.capacity
                                   - record.used - record.promised))
    return room


def _combinations(snap, request, choices):
    """Every combination of one pick per group from ``choices`` (a list of
    picks per group) whose summed amounts fit and that ``isolate`` allows,
    in ``itertools.product`` order, as ``(combination, amounts)``.

    Depth first: a partial combination that does not fit (or puts two
    numbered groups on one provider under ``isolate``) is dropped with
    every combination that extends it, as none of those can fit either; so
    the first candidate costs about one step per group and pick, not the
    product of the groups' picks.
    """
    isolate = [request.group_policy == 'isolate' and group.use_same_provider
               for group in request.groups]
    chosen, amounts, isolated = [], collections.Counter(), set()

    def extend(depth):
        if depth == len(choices):
            yield tuple(chosen), +amounts  # +: without the 0s left.
            return
        for pick in choices[depth]:
            if isolate[depth] and not isolated.isdisjoint(pick.providers):
                continue
            if not all(snap.records[key].fits_total(amounts[key] + amount)
                       for key, amount in pick.amounts.items()):
                continue
            chosen.append(pick)
            amounts.update(pick.amounts)
            if isolate[depth]:
                isolated.update(pick.providers)
            yield from extend(depth + 1)
            chosen.pop()
            amounts.subtract(pick.amounts)
            if isolate[depth]:
                isolated.difference_update(pick.providers)

    return extend(0)


def from_snapshot(snap, request, pool_rule):
    """Generate the candidates whose providers and anchor ``snap`` holds
    (AllocationRequest), without duplicates, in a stable order, one at a
    time: a caller that stops early stops the search."""
    def allowed(provider_id):
        return pool_rule.allows(snap.aggs(provider_id),
                                snap.aggs(snap.root[provider_id]))

    picks = [(_numbered_picks if group.use_same_provider
              else _unnumbered_picks)(snap, group, allowed)
             for group in request.groups]
    anchors = set(picks[0]).intersection(*picks[1:])
    totals = request.totals()
    seen = set()
    for anchor in sorted(anchors):
        # Groups that ask more than all their picks hold together have no
        # candidate here: say so before searching every way they fail.
        room = _room(snap, picks, anchor)
        if any(amount > room[rc] for rc, amount in totals.items()):
            continue
        for combination, amounts in _combinations(
                snap, request, [by_anchor[anchor] for by_anchor in picks]):
            mappings = {group.suffix: sorted(pick.providers) for group, pick
                        in zip(request.groups, combination)}
            key = (frozenset(amounts.items()),
                   frozenset((suffix, tuple(ids))
                             for suffix, ids in mappings.items()))
            if key in seen:
                continue
            seen.add(key)
            allocations = collections.defaultdict(dict)
            for (provider_id, rc), amount in sorted(amounts.items()):
                allocations[provider_id][rc] = amount
            yield AllocationRequest(dict(allocations), mappings)


def _limited(generated, limit):
    cap = CONF.placement.max_allocation_candidates
    if cap >= 0:
        generated = itertools.islice(generated, cap)
    if not CONF.placement.randomize_allocation_candidates:
        return list(itertools.islice(generated, limit))
    found = list(generated)
    if limit is not None and limit < len(found):
        return random.sample(found, limit)
    random.shuffle(found)
    return found


def _summaries(session, provider_ids):
    """Placement's provider_summaries for every provider in the trees of
    ``provider_ids``; returns ``(summaries, {id: uuid})``."""
    roots = session.execute(
        sa.select(_rp.c.root_provider_id).distinct()
        .where(_rp.c.id.in_(sorted(provider_ids)))).scalars().all()
    tree = providers.in_trees(session, roots)
    records = capacity.load(session, provider_ids=[p.id for p in tree])
    trait_names = traits.of_providers(session, [p.id for p in tree])
    summaries = {}
    for provider in tree:
        summaries[provider.uuid] = {
            'resources': {
                rc: {'capacity': record.capacity, 'used': record.used}
                for (provider_id, rc), record in sorted(records.items())
                if provider_id == provider.id},
            'traits': trait_names.get(provider.id, []),
            'parent_provider_uuid': provider.parent_provider_uuid,
            'root_provider_uuid': provider.root_provider_uuid,
        }
    return summaries, {p.id: p.uuid for p in tree}


def search(context, request):
    """``GET /allocation_candidates`` for a DeviceRequest, lease-pool rule
    included (the request's member keys carried by the context's project
    and roles): ``{"allocation_requests": [...], "provider_summaries":
    {...}}`` shaped as Placement 1.39 returns them."""
    with db_api.reader(context) as session:
        rule = pools.rule_for(session, request.member_keys,
                              pools.Carrier.of(context))
        found = _limited(iter_allocation_requests(session, request, rule),
                         request.limit)
        used_ids = {provider_id for areq in found
                    for provider_id in areq.allocations}
        summaries, uuids = (_summaries(session, used_ids) if used_ids
                            else ({}, {}))
    return {
        'allocation_requests': [{
            'allocations': {
                uuids[provider_id]: {'resources': resources}
                for provider_id, resources in areq.allocations.items()},
            'mappings': {
                suffix: [uuids[provider_id] for provider_id in ids]
                for suffix, ids in areq.mappings.items()},
        } for areq in found],
        'provider_summaries': summaries,
    }
