"""The embedded limit store: limits and projects in cyquota's own database.

Reads join the caller's transaction (a reserve reads its limits in its own
transaction). Writes validate their input first, are judged by the
enforcement model they are given (strict-two-level refuses a grandchild,
and a child limit above its parent's) on the facts of ``write_facts``, read
under its locks.
"""

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota.quota.limits import source
from cyquota.quota.limits import write_facts
from cyquota.quota import resources as quota_resources
from cyquota.quota import validation

_registered = models.RegisteredLimit.__table__
_project = models.ProjectLimit.__table__

# Both kinds of limit in one round trip, built once: this runs inside every
# reserve.
_LIMITS = sa.union_all(
    sa.select(_registered.c.resource, _registered.c.default_limit,
              sa.literal(0).label('own'))
    .where(_registered.c.resource.in_(
        sa.bindparam('resources', expanding=True))),
    sa.select(_project.c.resource, _project.c.resource_limit,
              sa.literal(1).label('own'))
    .where(_project.c.project_id == sa.bindparam('project_id'),
           _project.c.resource.in_(
               sa.bindparam('resources', expanding=True))))
_projects = models.Project.__table__
_PARENT_OF = (sa.select(_projects.c.parent_id)
              .where(_projects.c.id == sa.bindparam('_project_id')))

#: The one domain of the embedded store's projects, by Keystone's name.
DOMAIN = 'Default'

# Row kinds of the one-round-trip tree read.
_PARENT, _GRANDPARENT, _REGISTERED, _OWN, _PARENT_OWN = range(5)


class LocalLimitSource(source.LimitSource):
    """Registered limits, project limits and projects in the
    ``registered_limits``, ``project_limits`` and ``projects`` tables.
    """

    name = 'local'
    writable = True

    # -- reads -------------------------------------------------------------

    def get_registered_limits(self, context, resources):
        with db_api.reader(context) as session:
            rows = session.execute(
                sa.select(_registered.c.resource, _registered.c.default_limit)
                .where(_registered.c.resource.in_(resources)))
            return dict(rows.all())

    def get_project_limits(self, context, project_id, resources):
        with db_api.reader(context) as session:
            rows = session.execute(
                sa.select(_project.c.resource, _project.c.resource_limit)
                .where(_project.c.project_id == project_id,
                       _project.c.resource.in_(resources)))
            return dict(rows.all())

    def get_limits(self, context, project_id, resources):
        registered: dict[str, int] = {}
        own: dict[str, int] = {}
        with db_api.reader_connection(context) as conn:
            for resource, value, is_own in conn.execute(
                    _LIMITS, dict(project_id=project_id,
                                  resources=list(resources))):
                (own if is_own else registered)[resource] = value
        return registered, own

    def sql_limits(self):
        return (
            sa.select(_project.c.resource_limit)
            .where(_project.c.project_id == sa.bindparam('_project_id'),
                   _project.c.resource == sa.bindparam('_resource'))
            .scalar_subquery(),
            sa.select(_registered.c.default_limit)
            .where(_registered.c.resource == sa.bindparam('_resource'))
            .scalar_subquery())

    def get_parent(self, context, project_id):
        # One row by primary key, not the five-part tree read.
        with db_api.reader_connection(context) as conn:
            return conn.execute(_PARENT_OF,
                                {'_project_id': project_id}).scalar()

    def sql_parent(self):
        return _PARENT_OF.scalar_subquery()

    def get_children(self, context, project_id):
        with db_api.reader(context) as session:
            return session.execute(
                sa.select(_projects.c.id)
                .where(_projects.c.parent_id == project_id)
                .order_by(_projects.c.id)).scalars().all()

    def get_tree_limits(self, context, project_id, resources,
                        register=False):
        tree = self._read_tree(context, project_id, resources)
        if register and not tree.known:
            self._register(context, project_id)
        return tree

    def _read_tree(self, context, project_id, resources):
        """The ``TreeLimits`` of ``resources`` in one round trip."""
        parent = (sa.select(_projects.c.parent_id)
                  .where(_projects.c.id == project_id).scalar_subquery())
        no_value = sa.null().cast(sa.Integer)
        parts = [
            sa.select(sa.literal(_PARENT), _projects.c.parent_id, no_value)
            .where(_projects.c.id == project_id),
            sa.select(sa.literal(_GRANDPARENT), _projects.c.parent_id,
                      no_value)
            .where(_projects.c.id == parent,
                   _projects.c.parent_id.is_not(None)),
            sa.select(sa.literal(_REGISTERED), _registered.c.resource,
                      _registered.c.default_limit),
            sa.select(sa.literal(_OWN), _project.c.resource,
                      _project.c.resource_limit)
            .where(_project.c.project_id == project_id),
            sa.select(sa.literal(_PARENT_OWN), _project.c.resource,
                      _project.c.resource_limit)
            .where(_project.c.project_id == parent),
        ]
        parts[2] = parts[2].where(_registered.c.resource.in_(resources))
        parts[3] = parts[3].where(_project.c.resource.in_(resources))
        parts[4] = parts[4].where(_project.c.resource.in_(resources))
        known = False
        parent_id = grandparent_id = None
        limits: dict[int, dict[str, int]] = {
            _REGISTERED: {}, _OWN: {}, _PARENT_OWN: {}}
        with db_api.reader(context) as session:
            for kind, key, value in session.execute(sa.union_all(*parts)):
                if kind == _PARENT:
                    known, parent_id = True, key
                elif kind == _GRANDPARENT:
                    grandparent_id = key
                else:
                    limits[kind][key] = value
        return source.TreeLimits(
            project_id, parent_id, grandparent_id, limits[_REGISTERED],
            limits[_OWN], limits[_PARENT_OWN], known=known)

    def _register(self, context, project_id):
        with db_api.writer(context) as session:
            session.execute(_projects.insert().values(
                id=project_id, parent_id=None, created_at=models.utcnow()))

    def get_project(self, context, project_id):
        """``{id, parent_id, name}`` of a registered project."""
        validation.project_id(project_id)
        with db_api.reader(context) as session:
            row = session.execute(
                sa.select(_projects.c.id, _projects.c.parent_id,
                          _projects.c.name)
                .where(_projects.c.id == project_id)).mappings().first()
        if row is None:
            raise exception.ProjectNotFound(project_id=project_id)
        return dict(row)

    def project_names(self, context, project_id):
        """``{"<name>@Default"}`` of a named project: the embedded store
        has one domain, Keystone's default one."""
        with db_api.reader(context) as session:
            name = session.execute(
                sa.select(_projects.c.name)
                .where(_projects.c.id == project_id)).scalar()
        return {name + '@' + DOMAIN} if name else set()

    def list_registered_limits(self, context):
        """``{resource: default_limit}`` of every registered limit."""
        with db_api.reader(context) as session:
            return dict(session.execute(
                sa.select(_registered.c.resource,
                          _registered.c.default_limit)).all())

    def list_project_limits(self, context, project_id=None):
        """Explicit project limits as ``{project_id, resource,
        resource_limit}``, in (project, resource) order."""
        query = (sa.select(_project.c.project_id, _project.c.resource,
                           _project.c.resource_limit)
                 .order_by(_project.c.project_id, _project.c.resource))
        if project_id is not None:
            validation.project_id(project_id)
            query = query.where(_project.c.project_id == project_id)
        with db_api.reader(context) as session:
            return [dict(row) for row in session.execute(query).mappings()]

    # -- writes ------------------------------------------------------------

    @db_api.retry_on_conflict
    def set_registered_limit(self, context, resource, default_limit):
        """Set the default limit of ``resource``.

        Not judged against trees: a child's effective limit is capped by
        its parent's whatever the default becomes.
        """
        quota_resources.check_resource(resource)
        validation.limit(resource, default_limit)
        with db_api.writer(context) as session:
            updated = session.execute(
                _registered.update()
                .where(_registered.c.resource == resource)
                .values(default_limit=default_limit)).rowcount
            if not updated:
                session.execute(_registered.insert().values(
                    resource=resource, default_limit=default_limit,
                    created_at=models.utcnow()))

    @db_api.retry_on_conflict
    def set_project_limit(self, context, project_id, resource,
                          resource_limit, rules=None):
        validation.project_id(project_id)
        quota_resources.check_resource(resource)
        validation.limit(resource, resource_limit)
        with db_api.writer(context) as session:
            if rules is not None:
                rules.check_limit(write_facts.LimitWriteFacts(
                    session, project_id, resource), resource_limit)
            updated = session.execute(
                _project.update()
                .where(_project.c.project_id == project_id,
                       _project.c.resource == resource)
                .values(resource_limit=resource_limit)).rowcount
            if not updated:
                session.execute(_project.insert().values(
                    project_id=project_id, resource=resource,
                    resource_limit=resource_limit,
                    created_at=models.utcnow()))

    @db_api.retry_on_conflict
    def delete_project_limit(self, context, project_id, resource,
                             rules=None):
        validation.project_id(project_id)
        quota_resources.check_resource(resource)
        with db_api.writer(context) as session:
            if rules is not None:
                rules.check_limit(write_facts.LimitWriteFacts(
                    session, project_id, resource), None)
            deleted = session.execute(
                _project.delete()
                .where(_project.c.project_id == project_id,
                       _project.c.resource == resource)).rowcount
            if not deleted:
                raise exception.NotFound(
                    reason='project %s has no limit for %s' % (project_id,
                                                               resource))

    @db_api.retry_on_conflict
    def set_project(self, context, project_id, parent_id=None, name=None,
                    rules=None):
        """Register ``project_id`` under ``parent_id`` (None: a root), or
        rename a registered project. A project's parent is fixed once it is
        registered. Returns ``{id, parent_id, name}``."""
        validation.project_id(project_id)
        _check_parent_id(project_id, parent_id)
        if name is not None and (not isinstance(name, str)
                                 or not 1 <= len(name) <= 255):
            raise exception.Invalid(
                reason='name must be a string of 1 to 255 characters, got '
                       '%r' % (name,))
        with db_api.writer(context) as session:
            row = write_facts.lock_project(session, project_id)
            if parent_id is not None:
                parent = write_facts.lock_project(session, parent_id)
                if parent is None:
                    raise exception.InvalidParent(
                        project_id=project_id, parent_id=parent_id,
                        reason='no such project in the limit store; '
                               'register the parent first')
                if rules is not None:
                    rules.check_parent(project_id, parent_id,
                                       parent.parent_id)
            if row is not None:
                if row.parent_id != parent_id:
                    raise exception.ProjectParentConflict(
                        project_id=project_id, parent_id=parent_id,
                        reason="a project's parent is fixed once it is "
                               "registered (%s)" % (
                                   'its parent is %s' % row.parent_id
                                   if row.parent_id else 'it is a root'))
                session.execute(
                    _projects.update().where(_projects.c.id == project_id)
                    .values(name=name))
            else:
                if parent_id is not None and rules is not None:
                    rules.check_join(write_facts.LimitWriteFacts(
                        session, project_id), parent_id)
                session.execute(_projects.insert().values(
                    id=project_id, parent_id=parent_id, name=name,
                    created_at=models.utcnow()))
        return {'id': project_id, 'parent_id': parent_id, 'name': name}


def _check_parent_id(project_id, parent_id):
    if parent_id is None:
        return
    try:
        validation.project_id(parent_id)
    except exception.InvalidProjectId as error:
        raise exception.InvalidParent(project_id=project_id,
                                      parent_id=parent_id,
                                      reason=error.kwargs['reason'])
    if parent_id == project_id:
        raise exception.InvalidParent(
            project_id=project_id, parent_id=parent_id,
            reason='a project cannot be its own parent')
