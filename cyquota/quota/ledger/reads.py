"""Reads of the books: a project's usage, usage rows of many projects and
reservation rows, each in one transaction.

Reservation rows come newest first, ``id`` descending (the rows'
autoincrement key): the primary key serves it, a project's rows the index
on (project_id, id), so that a page costs the same however many rows there
are. The marker is the ``uuid`` of the previous page's last row.
"""

import functools

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import backends
from cyquota.db import markers
from cyquota.db import meter
from cyquota.db import models
from cyquota.quota.ledger import statements as sql
from cyquota.quota.limits import model as model_protocol

_usages = sql.USAGES
_reservations = models.Reservation.__table__

# Built once: it runs on every usage read. A budgeted row's balance now
# (NULL: no budget) comes in the same row.
_BALANCE = meter.balance(_usages).label('balance')
_PROJECT_USAGE = (
    sa.select(_usages.c.resource, _usages.c.used, _usages.c.reserved,
              _usages.c.leased, _usages.c.promised, _BALANCE)
    .where(_usages.c.project_id == sa.bindparam('project_id')))


def _now_seconds():
    """The meter's bind of now, for the balances a read shows."""
    return {'_now_s': meter.seconds(models.utcnow())}


def _with_budget(view, balance):
    """``view`` (a resource's counts) with ``remaining_hours`` where the
    resource has a budget (``balance``, unit-seconds, not None)."""
    if balance is not None:
        view['remaining_hours'] = meter.hours(balance)
    return view


class Reads:
    """The reads of one enforcement model (``limits.model``)."""

    def __init__(self, model):
        self.model = model
        #: The one-query usage documents (``_document``), by resources.
        self._documents = {}

    @db_api.retry_on_conflict
    def usage_document(self, context, project_id, resources):
        """``(project_usage, parent_id)``: the project's usage as
        ``project_usage`` reads it and its parent's id (None for a root).
        One query where the model decides by the project's own row and the
        source's limits and projects are in this database; otherwise the
        two reads, in one transaction. A resource with a budget also has
        ``remaining_hours``, its balance now."""
        resources = tuple(resources)
        if resources not in self._documents:
            self._documents[resources] = self._document(resources)
        statement = self._documents[resources]
        if statement is None:
            with db_api.reader_connection(context):
                return (self.project_usage(context, project_id, resources),
                        self.model.source.get_parent(context, project_id))
        with db_api.one_read_connection(context) as conn:
            rows = {row.resource: row for row in conn.execute(statement, {
                '_project_id': project_id,
                '_default': self.model.source.unregistered_limit,
                **_now_seconds()})}
        usage = {}
        for resource in resources:
            row = rows[resource]
            usage[resource] = _with_budget(model_protocol.usage_view(
                row.limit, row.used or 0, row.reserved or 0, row.leased or 0,
                row.promised or 0), row.balance)
        return usage, rows[resources[0]].parent_id

    def _document(self, resources):
        """The SELECT of ``usage_document``'s one query: a row per
        resource, with its usage row's counts (NULL where there is none),
        its limit and the project's parent; None where it cannot be one
        query."""
        limit = self.model.limit_sql()
        parent = self.model.source.sql_parent()
        if (not resources or limit is None or parent is None
                or not self.model.decides_by_own_row):
            return None
        wanted = sa.union_all(*[
            sa.select(sa.literal(resource, sa.String).label('resource'))
            for resource in resources]).subquery('wanted')
        return (
            sa.select(wanted.c.resource, _usages.c.used, _usages.c.reserved,
                      _usages.c.leased, _usages.c.promised, _BALANCE,
                      # The limit's rule, of each wanted resource in turn.
                      sql.limit_of(limit, wanted.c.resource).label('limit'),
                      parent.label('parent_id'))
            .select_from(wanted.outerjoin(_usages, sa.and_(
                _usages.c.project_id == sa.bindparam('_project_id'),
                _usages.c.resource == wanted.c.resource))))

    @db_api.retry_on_conflict
    def project_usage(self, context, project_id, resources):
        """``{resource: {limit, used, reserved, available}}``, plus what the
        model adds (under strict-two-level, ``tree``: ``{root_id, limit,
        used, reserved, available}`` of the project's whole tree) and,
        where a budget is set, ``remaining_hours``."""
        with db_api.reader_connection(context) as conn:
            rows = conn.execute(_PROJECT_USAGE, {'project_id': project_id,
                                                 **_now_seconds()}).all()
            found = {r.resource: r for r in rows}
            scope = self.model.read(context, conn, project_id, resources)
            limits = scope.project_limits
            result = {}
            for resource in resources:
                row = found.get(resource)
                counts = ((row.used, row.reserved, row.leased, row.promised)
                          if row is not None else (0, 0, 0, 0))
                result[resource] = dict(_with_budget(
                    model_protocol.usage_view(limits[resource], *counts),
                    row.balance if row is not None else None),
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
    def reservations(context, project_id=None, status=None, limit=1000,
                     marker=None):
        """At most ``limit`` reservation rows as dicts, newest first, after
        the one whose uuid is ``marker`` (InvalidQuery, 400, when the
        project has none such); in two queries at most."""
        query = (sa.select(_reservations)
                 .order_by(_reservations.c.id.desc()).limit(limit))
        if status is not None:
            query = query.where(_reservations.c.status == status)
        with db_api.reader(context) as session:
            if project_id is not None:
                # MariaDB's planner reads a project's index from its newest
                # row down to the marker rather than from the marker on;
                # named, it ranges (InnoDB keys end with the primary key,
                # so the (project, status) index is ordered by id too).
                query = backends.of(session).through_index(
                    query.where(_reservations.c.project_id == project_id),
                    _reservations,
                    'reservations_project_status_idx' if status is not None
                    else 'reservations_project_id_idx')
            if marker is not None:
                found = markers.find(session, marker, functools.partial(
                    _marker_row, project_id=project_id))
                query = query.where(_reservations.c.id < found.id)
            rows = session.execute(query).mappings().all()
        return [dict(row) for row in rows]


def _marker_row(uuid, project_id):
    """The reservation ``uuid``, of ``project_id`` (any: None)."""
    query = sa.select(_reservations.c.id).where(_reservations.c.uuid == uuid)
    if project_id is not None:
        query = query.where(_reservations.c.project_id == project_id)
    return query
