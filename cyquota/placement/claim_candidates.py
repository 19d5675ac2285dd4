"""The first allocation candidate of a device claim, read a page at a time.

A claim takes the first candidate of ``candidates``: the first anchor (a
tree's root) in id order that a combination serves, then the first such
combination in provider order. ``first`` finds the same one without
reading every provider of the requested classes: it reads pages of whole
trees in root order, the first page with the sharing providers, keeping
only the trees that have a row meeting necessary conditions of the rules
(``claim_sql``). The rules of ``candidates.from_snapshot`` then decide
exactly on each page, with its aggregates and pending lease peaks: the
first candidate among its anchors, and the anchors before them that only
sharing providers serve, is the search's first, as every anchor before
those had none. When a page has none, the next one holds twice as many
trees.

Statements: the first page with the sharing providers' rows, the trees
those serve (only if there are any), the aggregates of the page's
providers and roots (only if a ``member_of`` or a lease pool is in play)
and the pending lease peaks of its devices (only if a pending lease
allocation is on one): one to four, whatever the number of providers,
when the first tree kept holds a candidate, as it does unless it meets
the SQL's conditions but not the rules (pending lease peaks,
step sizes, groups that fit one by one but not together, ``isolate`` in a
tree of too few providers, sharing providers' anchors). Each further page
costs one to three more and holds twice the trees of the one before: at
worst, every tree kept is read, in about log2(trees kept) pages. A tree
is read whole, however large; the sharing providers are read whole (they
are few).
"""

import typing

from cyquota.lease_tables import calendar
from cyquota.placement import candidates
from cyquota.placement import capacity
from cyquota.placement import claim_sql
from cyquota.placement import providers


class Seen(typing.NamedTuple):
    """A chosen provider as the page read it: its uuid, and its
    generation, which the claim writes against (``allocations``)."""

    uuid: str
    generation: int


def _reads_aggregates(request, pool_rule):
    return bool(pool_rule or any(group.member_of
                                 for group in request.groups))


def _candidate(session, request, pool_rule, rows, shared, low, high):
    """The first candidate served by ``rows`` (``shared``: the anchors of
    their sharing providers) whose anchor is in ``[low, high]`` (None:
    unbounded), or None."""
    def in_window(anchor):
        return ((low is None or anchor >= low)
                and (high is None or anchor <= high))

    if not rows:
        return None
    root = {row.provider_id: row.root_id for row in rows}
    anchors = {provider_id: {root_id} for provider_id, root_id
               in root.items()}
    for provider_id, anchor in shared:
        anchors[provider_id].add(anchor)
    anchors = {provider_id: set(filter(in_window, found))
               for provider_id, found in anchors.items()}
    aggregates = {}
    if _reads_aggregates(request, pool_rule):
        aggregates = providers.aggregates_of(
            session, set(root).union(root.values(), *anchors.values()))
    peaks = calendar.device_promised(
        session, {row.provider_id for row in rows if row.pending})
    records = {}
    for row in rows:
        key = (row.provider_id, row.resource_class)
        # int(): MySQL sums come back as Decimal.
        records[key] = capacity.Capacity(
            *row[:8], used=int(row.used), promised=peaks.get(key, 0))
    chosen = next(candidates.from_snapshot(
        candidates.Snapshot(records, root, anchors, aggregates),
        request, pool_rule), None)
    if chosen is None:
        return None
    seen = {row.provider_id: Seen(row.uuid, row.generation) for row in rows}
    return chosen, {provider_id: seen[provider_id]
                    for provider_id in chosen.allocations}


def first(session, request, pool_rule, trees=1):
    """The first candidate of ``candidates.iter_allocation_requests(
    session, request, pool_rule)``, read ``trees`` trees at a time, twice
    as many each time.

    :returns: ``(AllocationRequest, {provider_id: Seen})`` of its
        providers, or None when there is no candidate.
    """
    statements, params = claim_sql.for_request(request, pool_rule)
    found = session.execute(statements.first,
                            dict(params, trees=trees)).all()
    sharing = [row for row in found if row.shares]
    shared = candidates.sharing_anchors(
        session, {row.provider_id for row in sharing})
    found = [row for row in found if not row.shares]
    low = None
    while True:
        roots = {row.root_id for row in found}
        # A page of fewer trees is the last; the anchors that only sharing
        # providers serve, up to the page's last tree, go with it.
        high = max(roots) if len(roots) == trees else None
        chosen = _candidate(session, request, pool_rule, found + sharing,
                            shared, low, high)
        if chosen is not None or high is None:
            return chosen
        low, trees = high + 1, trees * 2
        found = session.execute(statements.following, dict(
            params, trees=trees, start=low)).all()
