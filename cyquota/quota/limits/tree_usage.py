"""Tree usages: what a whole strict-two-level tree uses, kept as one
aggregate row per root (``doc/source/limits.rst``, "The tree check").

One ``tree_usages`` row per (root, resource) holds the sum of ``used`` and
of ``reserved`` over the root and its children. The ledger changes it in
the same transaction as a member's ``quota_usages`` row, by the same
amounts, and locks it *before* the member's row (root before child), so:

* the tree check reads one row, however many children the root has;
* reservations in different children of one root queue on the root's row,
  and together they can never take the tree past the root's limit;
* at every commit the row equals the sum of its members' rows.

A missing row is made from its members' rows: the first use of a tree, or
a database that ran under the flat model until now. ``find_drift`` and
``sync`` check and repair rows against their members (repair).

Every write of a row's ``used`` or ``leased`` moves its meter to now first
(``cyquota.db.meter``), as the members' rows do: the row meters what the
whole tree holds by attaches, to the second, and carries a root's budget
(``budget_base``), which covers the tree (SPEC 3.8).
"""

import dataclasses
import typing

from oslo_log import log as logging
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import meter
from cyquota.db import models
from cyquota.quota.limits import model as model_protocol

LOG = logging.getLogger(__name__)

_trees = models.TreeUsage.__table__
_usages = models.QuotaUsage.__table__

# Member ids per query when summing a tree, well under every database's
# limit of bound parameters.
_CHUNK = 500

_READ = (_trees.c.id, _trees.c.resource, _trees.c.used, _trees.c.reserved,
         _trees.c.promised, _trees.c.leased, _trees.c.metered,
         _trees.c.metered_at, _trees.c.budget_base)

_WRITE = meter.write_counts(_trees)


@dataclasses.dataclass
class _Aggregate:
    """One ``tree_usages`` row (``id`` None: not stored)."""

    id: int | None
    used: int
    reserved: int
    promised: int = 0
    leased: int = 0
    #: The tree's meter as locked and the root's budget (None: none).
    metered: int = 0
    metered_at: int | None = None
    budget_base: int | None = None


@dataclasses.dataclass(frozen=True)
class TreeDrift:
    """A tree usage that disagrees with the sum of its members."""

    root_id: str
    resource: str
    field: str
    recorded: int
    expected: int


class TreeUsage(model_protocol.Scope):
    """A root's tree usage rows, locked, kept in step with the usage rows
    of one member of the tree: the strict-two-level model's ``Scope``.

    :param tree: the member's ``strict_two_level.Tree``.
    :param rows: ``{resource: _Aggregate}``.
    """

    def __init__(self, tree, rows: dict[str, _Aggregate]):
        self.tree = tree
        self.rows = rows
        self._base: dict[str, tuple[int, int]] = {}
        self._leased = {r: row.leased for r, row in rows.items()}

    @classmethod
    def lock(cls, context, session, source, tree, resources, create):
        """Lock the root's rows of ``resources`` (``SELECT ... FOR
        UPDATE``, in resource order); a missing row is summed from the
        members and, with ``create``, inserted. A concurrent insert of the
        same row fails on the unique key and the caller's transaction is
        retried."""
        found = session.execute(
            sa.select(*_READ)
            .where(_trees.c.root_id == tree.root_id,
                   _trees.c.resource.in_(resources))
            .order_by(_trees.c.resource)
            .with_for_update()).all()
        rows = {row.resource: _aggregate(row) for row in found}
        missing = [r for r in resources if r not in rows]
        if missing:
            totals = member_totals(context, session, source, tree.root_id,
                                   missing, lock=create)
            for resource in missing:
                row = totals[resource]
                if create:
                    row.id = session.execute(_trees.insert().values(
                        root_id=tree.root_id, resource=resource,
                        used=row.used, reserved=row.reserved,
                        created_at=models.utcnow())).inserted_primary_key[0]
                rows[resource] = row
        return cls(tree, rows)

    @classmethod
    def read(cls, context, session, source, tree, resources):
        """The rows without locks (for reports)."""
        found = session.execute(
            sa.select(*_READ)
            .where(_trees.c.root_id == tree.root_id,
                   _trees.c.resource.in_(resources))).all()
        rows = {row.resource: dataclasses.replace(_aggregate(row), id=None)
                for row in found}
        missing = [r for r in resources if r not in rows]
        if missing:
            rows.update(member_totals(context, session, source,
                                      tree.root_id, missing))
        return cls(tree, rows)

    @property
    def root_id(self):
        return self.tree.root_id

    @property
    def project_limits(self) -> model_protocol.LimitMap:
        return self.tree.project_limits

    def levels(self, resource: str) -> list[model_protocol.Level]:
        """The tree, checked against the root's limit."""
        return [model_protocol.Level(
            'tree', self.root_id, 'root_id', self.tree.root_limits[resource],
            self.rows[resource], _trees)]

    def report(self, resource: str) -> dict:
        """The ``tree`` part of the member's usage document, with
        ``remaining_hours`` where the root's budget covers the tree."""
        row = self.rows[resource]
        view = dict(root_id=self.root_id, **model_protocol.usage_view(
            self.tree.root_limits[resource], row.used, row.reserved,
            row.leased, row.promised))
        balance = meter.balance_at(row, meter.seconds(models.utcnow()))
        if balance is not None:
            view['remaining_hours'] = meter.hours(balance)
        return {'tree': view}

    def track(self, usages: typing.Mapping[str, typing.Any]) -> None:
        """Remember the member's counts (``{resource: _Usage}``, just
        locked) so that ``write`` can apply what changed."""
        self._base = {r: (u.used, u.reserved) for r, u in usages.items()}

    def over(self, resource: str, delta: int) -> dict | None:
        """The ``overs`` entry if ``delta`` more would take the tree past
        the root's limit, else None."""
        limit = self.tree.root_limits[resource]
        row = self.rows[resource]
        if 0 <= limit < row.used + row.reserved + row.promised + delta:
            return model_protocol.over_entry(self.root_id, resource, 'tree',
                                             limit, row, delta)
        return None

    def write(self, conn: typing.Any,
              usages: typing.Mapping[str, typing.Any]) -> None:
        """Add to the root's rows what changed in the member's ``usages``
        since ``track``, with ``leased`` as lease events set it on the
        rows, each meter moved to now first."""
        changed = []
        for resource, usage in usages.items():
            row = self.rows.get(resource)
            base = self._base.get(resource)
            if row is None or row.id is None or base is None:
                continue
            used = row.used + usage.used - base[0]
            reserved = row.reserved + usage.reserved - base[1]
            if (used, reserved, row.leased) == (row.used, row.reserved,
                                                self._leased[resource]):
                continue
            if used < 0 or reserved < 0:
                LOG.warning('Tree usage of %s, %s had drifted below its '
                            'members (used %d, reserved %d); run quota sync',
                            self.root_id, resource, used, reserved)
            row.used, row.reserved = max(used, 0), max(reserved, 0)
            self._leased[resource] = row.leased
            changed.append(dict(_id=row.id, _used=row.used,
                                _reserved=row.reserved, _leased=row.leased))
        if changed:
            now = models.utcnow()
            moved = dict(meter.binds(now), _now=now)
            conn.execute(_WRITE, [dict(each, **moved) for each in changed])


def _aggregate(row):
    return _Aggregate(row.id, row.used, row.reserved, row.promised,
                      row.leased, row.metered, row.metered_at,
                      row.budget_base)


def member_totals(context, session, source, root_id, resources, lock=False):
    """``{resource: _Aggregate}`` summed over the root and its children's
    usage rows; ``lock`` takes shared locks on them (the root's rows are
    locked already, so the order stays root before child)."""
    members = [root_id] + list(source.get_children(context, root_id))
    totals = {r: _Aggregate(None, 0, 0) for r in resources}
    for start in range(0, len(members), _CHUNK):
        query = (sa.select(_usages.c.resource, _usages.c.used,
                           _usages.c.reserved)
                 .where(_usages.c.project_id.in_(members[start:start +
                                                         _CHUNK]),
                        _usages.c.resource.in_(resources)))
        if lock:
            query = query.with_for_update(read=True)
        for resource, used, reserved in session.execute(query):
            totals[resource].used += used
            totals[resource].reserved += reserved
    return totals


def _roots(context, root_id=None):
    """Every root with tree usage rows, in order, a batch at a time."""
    marker = None
    while True:
        query = (sa.select(_trees.c.root_id).distinct()
                 .order_by(_trees.c.root_id).limit(CONF.quota.batch_size))
        if root_id is not None:
            query = query.where(_trees.c.root_id == root_id)
        if marker is not None:
            query = query.where(_trees.c.root_id > marker)
        with db_api.reader(context) as session:
            roots = session.execute(query).scalars().all()
        yield from roots
        if len(roots) < CONF.quota.batch_size:
            return
        marker = roots[-1]


def _compare(context, session, source, root_id, lock=False):
    """How one root's rows differ from their members' sum, as
    ``[TreeDrift]``. The rows of a project that is not a root (any more)
    should hold zero."""
    query = (sa.select(_trees.c.id, _trees.c.resource, _trees.c.used,
                       _trees.c.reserved)
             .where(_trees.c.root_id == root_id)
             .order_by(_trees.c.resource))
    if lock:
        query = query.with_for_update()
    rows = {row.resource: row for row in session.execute(query)}
    if source.get_parent(context, root_id) is None:
        expected = member_totals(context, session, source, root_id,
                                 list(rows), lock=lock)
    else:
        expected = {r: _Aggregate(None, 0, 0) for r in rows}
    drift = []
    for resource, row in rows.items():
        for field in ('used', 'reserved'):
            recorded = getattr(row, field)
            wanted = getattr(expected[resource], field)
            if recorded != wanted:
                drift.append(TreeDrift(root_id, resource, field, recorded,
                                       wanted))
    return drift


def find_drift(context, source, root_id=None):
    """Every tree usage that disagrees with the sum of its members'
    ``quota_usages`` rows, in (root, resource) order.

    :param source: the limit source, which knows each root's children.
    """
    drift = []
    for root in _roots(context, root_id):
        with db_api.reader(context) as session:
            drift.extend(_compare(context, session, source, root))
    return drift


@db_api.retry_on_conflict
def _sync_root(context, source, root_id):
    with db_api.writer(context) as session:
        drift = _compare(context, session, source, root_id, lock=True)
        now = models.utcnow()
        for item in drift:
            # The meter counted the drifted value until now.
            session.execute(
                _trees.update()
                .where(_trees.c.root_id == root_id,
                       _trees.c.resource == item.resource)
                .ordered_values(*meter.advance(_trees),
                                (item.field, item.expected),
                                ('updated_at', now)),
                meter.binds(now))
    return drift


def sync(context, source, root_id=None):
    """Set every drifting tree usage to the sum of its members, each root
    in its own transaction under the root's locks (so no reservation can
    slip in between); returns the repairs as ``TreeDrift`` (``recorded``
    is the old value, ``expected`` the new)."""
    repaired = []
    for root in _roots(context, root_id):
        repaired.extend(_sync_root(context, source, root))
    return repaired
