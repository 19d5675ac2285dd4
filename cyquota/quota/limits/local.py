"""The embedded limit store: limits kept in cyquota's own database.

Reads join the caller's transaction (a reserve reads its limits in its own
transaction); writes validate their input first.
"""

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota.quota.limits import source
from cyquota.quota import resources as quota_resources
from cyquota.quota import validation

_registered = models.RegisteredLimit.__table__
_project = models.ProjectLimit.__table__


class LocalLimitSource(source.LimitSource):
    """Registered and project limits in the ``registered_limits`` and
    ``project_limits`` tables."""

    name = 'local'

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
        # One round trip: this runs inside every reserve.
        query = sa.union_all(
            sa.select(_registered.c.resource, _registered.c.default_limit,
                      sa.literal(0).label('own'))
            .where(_registered.c.resource.in_(resources)),
            sa.select(_project.c.resource, _project.c.resource_limit,
                      sa.literal(1).label('own'))
            .where(_project.c.project_id == project_id,
                   _project.c.resource.in_(resources)))
        registered, own = {}, {}
        with db_api.reader(context) as session:
            for resource, value, is_own in session.execute(query):
                (own if is_own else registered)[resource] = value
        return registered, own

    # Writes (the embedded store's small Python API; REST sits on top).

    @db_api.retry_on_conflict
    def set_registered_limit(self, context, resource, default_limit):
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
                          resource_limit):
        validation.project_id(project_id)
        quota_resources.check_resource(resource)
        validation.limit(resource, resource_limit)
        with db_api.writer(context) as session:
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

    def delete_project_limit(self, context, project_id, resource):
        validation.project_id(project_id)
        quota_resources.check_resource(resource)
        with db_api.writer(context) as session:
            deleted = session.execute(
                _project.delete()
                .where(_project.c.project_id == project_id,
                       _project.c.resource == resource)).rowcount
        if not deleted:
            raise exception.NotFound(
                reason='project %s has no limit for %s' % (project_id,
                                                           resource))
