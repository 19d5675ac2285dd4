"""Usage rows: a project's ``quota_usages`` rows, locked, changed in
memory and written back, and the drift events of counts that would have
gone below zero."""

import dataclasses

from oslo_log import log as logging

from cyquota.db import meter
from cyquota.db import models
from cyquota.db import prepared
from cyquota.quota.ledger import statements as sql

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Usage:
    """A locked ``quota_usages`` row, changed in memory, then written
    (``id`` None: no row yet, nothing held)."""

    id: int | None
    resource: str
    used: int
    reserved: int
    #: What pending leases are promised at their peak from now on, and
    #: what active leases hold (part of ``used``); kept by lease events.
    promised: int = 0
    leased: int = 0
    #: The row's meter as locked (``cyquota.db.meter``) and its budget
    #: (None: none).
    metered: int = 0
    metered_at: int | None = None
    budget_base: int | None = None
    #: The project's limit of the resource, where it was read with the
    #: row (``lock``'s ``model``), else None.
    limit: int | None = None
    dirty: bool = False

    def add(self, field, delta):
        """Add ``delta`` to ``field``, stopping at zero; returns what was
        applied."""
        current = getattr(self, field)
        applied = max(delta, -current)
        setattr(self, field, current + applied)
        self.dirty = self.dirty or applied != 0
        return applied

    def take(self, field, amount):
        """Take ``amount`` from ``field``, stopping at zero; returns what
        was taken."""
        return -self.add(field, -amount)


def lock(conn, project_id, resources, create=False, scope=None,
         model=None):
    """Lock a project's usage rows of ``resources`` in resource order
    (``SELECT ... FOR UPDATE``); with ``create``, insert the missing ones
    (else they are zero rows that are not stored). ``scope``: the model's
    scope of the transaction, told the counts as locked. ``model``: read
    each stored row's ``limit`` under that enforcement model in the same
    query, where its limits are in SQL."""
    params = dict(project_id=project_id, resources=list(resources))
    statement = model and sql.lock_usages_with_limits(model)
    if statement is None:
        rows = conn.execute(sql.LOCK_USAGES, params)
    else:
        params.update(_project_id=project_id,
                      _default=model.source.unregistered_limit)
        # Prepared: PostgreSQL plans the limits' subqueries longer than it
        # runs them.
        rows = prepared.execute(conn, statement, params)
    usages = {row.resource: Usage(*row) for row in rows}
    for resource in resources:
        if resource in usages:
            continue
        if not create:
            usages[resource] = Usage(None, resource, 0, 0)
            continue
        # A concurrent first use of the pair makes this insert fail on the
        # unique constraint; the whole transaction is retried.
        result = conn.execute(sql.INSERT_USAGE, dict(
            project_id=project_id, resource=resource, used=0, reserved=0,
            created_at=models.utcnow()))
        usages[resource] = Usage(result.inserted_primary_key[0], resource,
                                 0, 0)
    if scope is not None:
        scope.track(usages)
    return usages


def write(conn, usages, scope):
    """Write the changed rows, each meter moved to now first, then let the
    model's scope follow them."""
    now = models.utcnow()
    moved = meter.binds(now)
    changed = [dict(_id=u.id, _used=u.used, _reserved=u.reserved,
                    _leased=u.leased, _now=now, **moved)
               for u in usages.values() if u.dirty]
    if changed:
        conn.execute(sql.WRITE_USAGE,
                     changed[0] if len(changed) == 1 else changed)
    # A level above may change with no row of the project (a lease's
    # ``leased`` where the project's had drifted to zero).
    scope.write(conn, usages)


def record_drift(conn, project_id, resource, consumer_id, kind, requested,
                 applied, detail):
    """Record that a count could not take all of a change (it would have
    gone below zero): drift that repair reports until a sync."""
    LOG.warning('Quota drift in project %s, %s: %s (%s)', project_id,
                resource, kind, detail)
    conn.execute(sql.DRIFT.insert().values(
        project_id=project_id, resource=resource, consumer_id=consumer_id,
        kind=kind, requested=requested, applied=applied,
        detail=detail[:1024], created_at=models.utcnow()))
