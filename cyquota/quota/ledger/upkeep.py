"""Upkeep of the books: purge old rows, and the locked corrections that
repair (``cyquota.quota.repair``) applies: set a project's counts, or what
its consumers hold, to what the records or the agents say."""

import datetime

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.db import refusal_log_models
from cyquota.quota.ledger import consumers
from cyquota.quota.ledger import statements as sql
from cyquota.quota.ledger import usage as usage_rows

_REFUSALS = refusal_log_models.Refusal.__table__


class Upkeep:
    """Purge and corrections of one enforcement model
    (``limits.model``)."""

    def __init__(self, model):
        self.model = model

    @staticmethod
    def purge(context):
        """Delete terminal reservation rows, resolved drift events and
        recorded refusals older than ``[quota] reservation_retention``;
        returns how many rows."""
        before = models.utcnow() - datetime.timedelta(
            seconds=CONF.quota.reservation_retention)
        total = 0
        for table, where in (
                (sql.RESERVATIONS, sa.and_(
                    sql.RESERVATIONS.c.status.in_(models.TERMINAL_STATUSES),
                    sql.RESERVATIONS.c.updated_at < before)),
                (sql.DRIFT, sql.DRIFT.c.resolved_at < before),
                (_REFUSALS, _REFUSALS.c.created_at < before)):
            while True:
                ids = _purge_batch(context, table, where)
                total += len(ids)
                if len(ids) < CONF.quota.batch_size:
                    break
        return total

    @db_api.retry_on_conflict
    def sync_usage(self, context, project_id, resources, expected_counts):
        """Set a project's counts to what its records say, under the usual
        locks; returns the changes as ``(resource, field, old, new)``.

        ``expected_counts(context, project_id, resources)`` returns
        ``{resource: {"used": n, "reserved": n}}``; it runs inside the
        locked transaction, so no ledger operation can slip in between.
        """
        changes = []
        with db_api.writer(context) as session:
            scope = self.model.lock(context, session, project_id, resources,
                                    create=True)
            usages = usage_rows.lock(session, project_id, resources,
                                     create=True, scope=scope)
            expected = expected_counts(context, project_id, resources)
            for resource in resources:
                usage = usages[resource]
                for field, value in expected[resource].items():
                    old = getattr(usage, field)
                    if old != value:
                        usage.add(field, value - old)
                        changes.append((resource, field, old, value))
            usage_rows.write(session, usages, scope)
        return changes

    @db_api.retry_on_conflict
    def adopt_consumer_usage(self, context, project_id, holdings):
        """Set what consumers hold to ``holdings`` ({(resource,
        consumer_id): amount}, e.g. what the agents report), under the
        project's locks; returns the changes as ``(resource, consumer_id,
        old, new)``. The counts follow with ``sync_usage``."""
        resources = sorted({resource for resource, _ in holdings})
        changes = []
        with db_api.writer(context) as session:
            scope = self.model.lock(context, session, project_id, resources,
                                    create=True)
            usage_rows.lock(session, project_id, resources, create=True,
                            scope=scope)
            for (resource, consumer_id), amount in sorted(holdings.items()):
                old = consumers.set_held(session, project_id, resource,
                                         consumer_id, amount)
                if old is not None:
                    changes.append((resource, consumer_id, old, amount))
        return changes


@db_api.retry_on_conflict
def _purge_batch(context, table, where):
    # Retried: two conductors purging at once on Galera nodes delete the
    # same rows, and one loses certification (a deadlock).
    with db_api.writer(context) as session:
        ids = session.execute(
            sa.select(table.c.id).where(where)
            .limit(CONF.quota.batch_size)).scalars().all()
        if ids:
            session.execute(table.delete().where(table.c.id.in_(ids)))
    return ids
