"""Reads of the books: a project's usage, usage rows of many projects and
reservation rows, each in one transaction."""

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.quota.ledger import statements as sql
from cyquota.quota.limits import model as model_protocol

_usages = sql.USAGES
_reservations = sql.RESERVATIONS

# Built once: it runs on every usage read.
_PROJECT_USAGE = (
    sa.select(_usages.c.resource, _usages.c.used, _usages.c.reserved,
              _usages.c.leased, _usages.c.promised)
    .where(_usages.c.project_id == sa.bindparam('project_id')))


class Reads:
    """The reads of one enforcement model (``limits.model``)."""

    def __init__(self, model):
        self.model = model

    @db_api.retry_on_conflict
    def project_usage(self, context, project_id, resources):
        """``{resource: {limit, used, reserved, available}}``, plus what the
        model adds (under strict-two-level, ``tree``: ``{root_id, limit,
        used, reserved, available}`` of the project's whole tree)."""
        with db_api.reader(context) as session:
            # Core, not the ORM session: these are plain rows.
            rows = session.connection().execute(
                _PROJECT_USAGE, {'project_id': project_id}).all()
            found = {r.resource: (r.used, r.reserved, r.leased, r.promised)
                     for r in rows}
            scope = self.model.read(context, session, project_id, resources)
            limits = scope.project_limits
            result = {}
            for resource in resources:
                result[resource] = dict(
                    model_protocol.usage_view(limits[resource],
                                              *found.get(resource,
                                                         (0, 0, 0, 0))),
                    **scope.report(resource))
        return result

    @db_api.retry_on_conflict
    def usages(self, context, resources, project_id=None, resource=None,
               limit=1000, marker=None):
        """Usage rows with their limits, ordered by (project, resource).

        ``marker`` is the ``(project_id, resource)`` of the last row of the
        previous page.
        """
        query = (sa.select(_usages.c.project_id, _usages.c.resource,
                           _usages.c.used, _usages.c.reserved,
                           _usages.c.leased, _usages.c.promised)
                 .where(_usages.c.resource.in_(resources))
                 .order_by(_usages.c.project_id, _usages.c.resource)
                 .limit(limit))
        if project_id is not None:
            query = query.where(_usages.c.project_id == project_id)
        if resource is not None:
            query = query.where(_usages.c.resource == resource)
        if marker is not None:
            query = query.where(sa.tuple_(_usages.c.project_id,
                                          _usages.c.resource) > tuple(marker))
        result = []
        with db_api.reader(context) as session:
            limits = {}
            for row in session.execute(query).all():
                if row.project_id not in limits:
                    limits[row.project_id] = self.model.project_limits(
                        context, row.project_id, resources)
                result.append(dict(
                    project_id=row.project_id, resource=row.resource,
                    **model_protocol.usage_view(
                        limits[row.project_id][row.resource], row.used,
                        row.reserved, row.leased, row.promised)))
        return result

    @staticmethod
    @db_api.retry_on_conflict
    def reservations(context, project_id=None, status=None, limit=1000):
        """Reservation rows as dicts, newest first."""
        query = sa.select(_reservations).order_by(_reservations.c.id.desc())
        if project_id is not None:
            query = query.where(_reservations.c.project_id == project_id)
        if status is not None:
            query = query.where(_reservations.c.status == status)
        with db_api.reader(context) as session:
            rows = session.execute(query.limit(limit)).mappings().all()
        return [dict(r) for r in rows]
