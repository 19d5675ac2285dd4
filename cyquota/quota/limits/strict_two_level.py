"""The strict-two-level enforcement model (Keystone's ``strict_two_level``;
``doc/source/limits.rst``).

A tree is a root and its children, never deeper. Limits:

* a root's limit is its own, else the registered default;
* a child's limit is its own, else the registered default, and never more
  than its parent's: a child with no limit of its own gets
  min(registered default, parent limit), and a child limit above the
  parent's is refused when it is written;
* the children's limits may add up to more than the parent's (limits are
  over-committed, usage is not).

Usage: each project stays within its own limit, and the usage of the
whole tree (the root's own plus every child's) stays within the root's
limit. That tree usage is one aggregate row per (root, resource), kept by
``tree_usage`` in the ledger's transactions, so the tree check costs the
same with one child or ten thousand.

-1 means unlimited and 0 means zero at every level, in writes and checks
alike (Keystone's own validation lets a child above a parent of 0 and
refuses one below a parent of -1; cyquota does neither).
"""

import dataclasses
import typing

import sqlalchemy as sa

from cyquota import exception
from cyquota.quota.limits import model
from cyquota.quota.limits import source as limit_source
from cyquota.quota.limits import tree_usage
from cyquota.quota.limits import write_facts


def lower(first: int, second: int) -> int:
    """The stricter of two limits (-1 is unlimited)."""
    if first < 0:
        return second
    if second < 0:
        return first
    return min(first, second)


def fits(limit: int, ceiling: int) -> bool:
    """Whether ``limit`` is no more than ``ceiling`` (-1 is unlimited)."""
    return ceiling < 0 or 0 <= limit <= ceiling


@dataclasses.dataclass(frozen=True)
class Tree:
    """A project's place in its tree and the limits that hold it."""

    project_id: str
    root_id: str
    #: ``{resource: limit}`` the project itself is held to.
    project_limits: model.LimitMap
    #: ``{resource: limit}`` the whole tree is held to (the root's limits).
    root_limits: model.LimitMap


class StrictTwoLevelModel(model.EnforcementModel):
    """Hierarchical enforcement over trees of a root and its children."""

    name = 'strict-two-level'
    description = ('Strict usage enforcement for parent/child '
                   'relationships: trees are a root and its children, no '
                   "child limit exceeds its parent's, and the usage of a "
                   "whole tree never exceeds its root's limit.")
    # The root's tree usage row decides too.
    decides_by_own_row = False

    def __init__(self, source: limit_source.LimitSource):
        self.source = source

    def tree(self, context: typing.Any, project_id: str,
             resources: typing.Collection[str],
             register: bool = False) -> Tree:
        """The ``Tree`` of ``project_id`` for ``resources``.

        ``register`` is passed to the source (see
        ``LimitSource.get_tree_limits``): a reservation registers an unknown
        project as a root.
        """
        raw = self.source.get_tree_limits(context, project_id, resources,
                                          register=register)
        if raw.grandparent_id is not None:
            raise exception.HierarchyTooDeep(
                project_id=project_id, parent_id=raw.parent_id,
                grandparent_id=raw.grandparent_id)
        fallback = self.source.unregistered_limit
        defaults = {r: raw.registered.get(r, fallback) for r in resources}
        own = {r: raw.own.get(r, defaults[r]) for r in resources}
        if raw.parent_id is None:
            return Tree(project_id, project_id, own, own)
        root = {r: raw.parent_own.get(r, defaults[r]) for r in resources}
        return Tree(project_id, raw.parent_id,
                    {r: lower(own[r], root[r]) for r in resources}, root)

    def project_limits(self, context: typing.Any, project_id: str,
                       resources: typing.Collection[str]) -> model.LimitMap:
        """``{resource: limit}`` that ``project_id`` itself is held to."""
        return self.tree(context, project_id, resources).project_limits

    def limit_sql(self) -> sa.ColumnElement | None:
        """None: a limit of a child depends on its parent's."""
        return None

    # -- the ledger's transactions -----------------------------------------

    def lock(self, context: typing.Any, conn: typing.Any, project_id: str,
             resources: typing.Sequence[str],
             create: bool) -> tree_usage.TreeUsage:
        """Lock the root's tree usage rows of ``resources`` (creating the
        missing ones with ``create``, which also registers an unknown
        project as a root); returns the ``TreeUsage``."""
        tree = self.tree(context, project_id, resources, register=create)
        return tree_usage.TreeUsage.lock(context, conn, self.source, tree,
                                         resources, create)

    def read(self, context: typing.Any, conn: typing.Any, project_id: str,
             resources: typing.Sequence[str]) -> tree_usage.TreeUsage:
        """The ``TreeUsage`` of ``project_id``'s tree, unlocked."""
        return tree_usage.TreeUsage.read(
            context, conn, self.source,
            self.tree(context, project_id, resources), resources)

    def find_drift(self, context: typing.Any,
                   root_id: str | None = None) -> list:
        """Tree usages that disagree with their members' counts."""
        return tree_usage.find_drift(context, self.source, root_id)

    def sync(self, context: typing.Any,
             project_id: str | None = None) -> list:
        """Set every drifting tree usage to the sum of its members."""
        return tree_usage.sync(context, self.source, project_id)

    # -- judging writes to the embedded store ------------------------------

    def check_parent(self, project_id: str, parent_id: str,
                     grandparent_id: str | None) -> None:
        """Refuse a grandchild: the parent must be a root."""
        if grandparent_id is not None:
            raise exception.HierarchyTooDeep(
                project_id=project_id, parent_id=parent_id,
                grandparent_id=grandparent_id)

    def check_limit(self, facts: write_facts.LimitWriteFacts,
                    limit: int | None) -> None:
        """Refuse a project limit that breaks its tree.

        :param facts: the store's ``LimitWriteFacts`` of the project and
            resource written, read under the store's locks.
        :param limit: the new own limit; None when it is being removed
            (the project falls back to the registered default).
        """
        parent_id = facts.parent_id()
        parent_own = child = None
        if parent_id is not None:
            parent_own = facts.own_limit(parent_id)
        else:
            child = facts.largest_child_limit()
        registered = facts.registered_limit()
        default = self.source.unregistered_limit if registered is None \
            else registered
        if parent_id is not None:
            parent_limit = default if parent_own is None else parent_own
            if limit is not None and not fits(limit, parent_limit):
                raise exception.LimitHierarchyConflict(
                    limit=limit, resource=facts.resource,
                    project_id=facts.project_id,
                    reason="it is above the limit of its parent %s (%d)"
                           % (parent_id, parent_limit))
        if child is not None:
            child_id, child_limit = child
            effective = default if limit is None else limit
            if not fits(child_limit, effective):
                raise exception.LimitHierarchyConflict(
                    limit=effective, resource=facts.resource,
                    project_id=facts.project_id,
                    reason='it is below the limit of its child %s (%d)'
                           % (child_id, child_limit))

    def check_join(self, facts: write_facts.LimitWriteFacts,
                   parent_id: str) -> None:
        """A project may join a tree if it holds no quota yet (its usage
        is counted in its own tree until then) and its own limits fit under
        the parent's."""
        held = facts.held_resource()
        if held is not None:
            raise exception.ProjectParentConflict(
                project_id=facts.project_id, parent_id=parent_id,
                reason='it already holds %s as a root of its own tree; a '
                       'project joins a tree before its first use' % held)
        for resource, limit in facts.own_limits():
            self.check_limit(facts.for_resource(resource, parent_id), limit)
