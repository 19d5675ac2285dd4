"""What an enforcement model may read to judge a write to the embedded
limit store, read under the store's locks.

The store hands a model a ``LimitWriteFacts`` of the project and resource
being written; the model reads only what its rule needs (the flat model
reads nothing, so its writes lock nothing). Locks follow one order, the
project's ``projects`` row before its parent's, so that two writes cannot
together break a rule that each checked alone. Reading the place of an
unregistered project registers it as a root, so a concurrent attempt to
place it under a parent collides on the primary key and is retried.
"""

import sqlalchemy as sa

from cyquota.db import models

_registered = models.RegisteredLimit.__table__
_project = models.ProjectLimit.__table__
_projects = models.Project.__table__
_usages = models.QuotaUsage.__table__


def lock_project(session, project_id):
    """Lock a ``projects`` row; returns ``(id, parent_id)`` or None.

    The row is written too (``updated_at``): on a Galera cluster a row lock
    does not reach the other nodes, but a write does, through
    certification, so two limit writes on different nodes that each judged
    the rule under this row cannot both commit."""
    session.execute(_projects.update().where(_projects.c.id == project_id)
                    .values(updated_at=models.utcnow()))
    return session.execute(
        sa.select(_projects.c.id, _projects.c.parent_id)
        .where(_projects.c.id == project_id)
        .with_for_update()).first()


class LimitWriteFacts:
    """The facts of one project and resource, in the writer's session.

    :param parent_id: the project's parent when the caller has locked it
        already (a project joining a tree); else read on demand.
    """

    _UNREAD = object()

    def __init__(self, session, project_id, resource=None,
                 parent_id=_UNREAD):
        self._session = session
        self.project_id = project_id
        self.resource = resource
        self._parent_id = parent_id

    def for_resource(self, resource, parent_id):
        """The same project's facts of another resource, under
        ``parent_id`` (already locked)."""
        return LimitWriteFacts(self._session, self.project_id, resource,
                               parent_id)

    def parent_id(self):
        """The project's parent (None: a root). Locks the project's row,
        registering it as a root if unknown, then its parent's row."""
        if self._parent_id is self._UNREAD:
            row = lock_project(self._session, self.project_id)
            if row is None:
                self._session.execute(_projects.insert().values(
                    id=self.project_id, parent_id=None,
                    created_at=models.utcnow()))
                self._parent_id = None
            else:
                self._parent_id = row.parent_id
                if row.parent_id is not None:
                    lock_project(self._session, row.parent_id)
        return self._parent_id

    def registered_limit(self):
        """The resource's registered default, or None."""
        return self._session.execute(
            sa.select(_registered.c.default_limit)
            .where(_registered.c.resource == self.resource)).scalar()

    def own_limit(self, project_id):
        """``project_id``'s own limit of the resource, or None."""
        return self._session.execute(
            sa.select(_project.c.resource_limit)
            .where(_project.c.project_id == project_id,
                   _project.c.resource == self.resource)).scalar()

    def largest_child_limit(self):
        """``(child_id, limit)`` of the project's child with the largest
        explicit limit of the resource (unlimited first), or None."""
        return self._session.execute(
            sa.select(_project.c.project_id, _project.c.resource_limit)
            .join(_projects, _projects.c.id == _project.c.project_id)
            .where(_projects.c.parent_id == self.project_id,
                   _project.c.resource == self.resource)
            .order_by(sa.case((_project.c.resource_limit < 0, 0), else_=1),
                      _project.c.resource_limit.desc())
            .limit(1)).first()

    def held_resource(self):
        """A resource the project uses or has reserved, or None."""
        return self._session.execute(
            sa.select(_usages.c.resource)
            .where(_usages.c.project_id == self.project_id,
                   _usages.c.used + _usages.c.reserved > 0)
            .limit(1)).scalar()

    def own_limits(self):
        """``[(resource, limit)]`` the project has set explicitly."""
        return self._session.execute(
            sa.select(_project.c.resource, _project.c.resource_limit)
            .where(_project.c.project_id == self.project_id)).all()
