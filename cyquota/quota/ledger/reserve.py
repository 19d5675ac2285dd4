"""Reserve: hold quota for a project until commit, rollback or expiry.

Two paths. When the enforcement model lets a project's own usage row
decide, each count is changed by one conditional UPDATE that adds a
positive delta to ``reserved`` only if the total fits the limit (read by
the statement itself when the limits are in this database), or checks
that a negative one leaves ``used`` at zero or more, and the reservation
rows are inserted without reading any usage row: on PostgreSQL and
MariaDB in one statement (``one_statement`` tells how), elsewhere one
statement for the UPDATEs of every resource and one for the INSERTs
(where the driver counts the rows of a batch). A reserve of one resource
that claims a device for the common request (the device hook's
``in_statement``) takes it too: on PostgreSQL and MariaDB its claim a
step of the one statement, elsewhere its steps one statement each;
other claims take the locked path. Anything
else, and any such statement that changes nothing (no row yet, over
quota, overflow, a request id seen before, a claim it cannot decide),
takes the locked path: it locks
what the model's rule reads and the usage rows, reads them, and decides,
saying exactly why it refuses.

A positive delta is also refused where the usage row has a budget
(``budget_base``) whose balance at the reserve's instant is at or below
zero (SPEC 3.8): by the same conditional UPDATE (``statements.fits``),
or on the locked path, under the same locks, as ``BudgetExhausted``
(OverQuota first where both apply). A detach is never refused by a
budget, and what runs goes on: the balance may go negative.
"""

from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyquota.budgets import units
from cyquota.db import api as db_api
from cyquota.db import backends
from cyquota.db import meter
from cyquota.db import models
from cyquota import exception
from cyquota.quota.ledger import binds
from cyquota.quota.ledger import one_statement
from cyquota.quota.ledger import statements as sql
from cyquota.quota.ledger import usage as usage_rows
from cyquota.quota.limits import model as model_protocol


class _Undecided(Exception):
    """A conditional UPDATE changed no row: the locked path decides."""


class Reserve:
    """The reserve of one enforcement model.

    :param model: the enforcement model (``limits.model``).
    :param devices: the device hook, whose ``claim`` joins the reserve's
        transaction.
    """

    def __init__(self, model, devices):
        self.model = model
        self.devices = devices
        limit = model.limit_sql()
        #: Whether the conditional UPDATE reads the limit itself.
        self._limit_in_sql = limit is not None
        # Typed: PostgreSQL would infer a bare bind compared with binds as
        # text.
        self._limit = (sa.cast(sa.bindparam('_limit'), sa.BigInteger)
                       if limit is None else limit)
        self._statement = sql.reserve_if_fits(self._limit)
        #: The binds of each resource's statements, one by one.
        self._binds = binds.Binds(
            binds.names_of(self._statement, sql.REQUEST_SEEN,
                           sql.INSERT_RESERVATION_OF_USAGE),
            sql.Reserve, sql.Resource)
        #: The one-statement reserves (``one_statement.reserve``), by
        #: (resources, request id), and those that claim a device
        #: (``one_statement.claiming_reserve``), by the pool rule too.
        self._one_statements = {}
        #: The steps of a claim run one by one, and their binds, by
        #: backend and pool rule.
        self._claim_steps = {}

    @db_api.retry_on_conflict
    def __call__(self, context, project_id, deltas, expire, request_id=None,
                 consumer_id=None, dry_run=False, devices=None):
        """Hold ``deltas`` for ``project_id``, all resources or none;
        returns the reservation uuids in resource order (``[]`` for a dry
        run, which writes nothing). ``devices``: a device request to
        allocate to ``consumer_id`` in the same transaction."""
        if not dry_run and self.model.decides_by_own_row:
            claim = None
            if devices is not None:
                claim = self._claim_in_statement(context, deltas, devices)
            if devices is None or claim is not None:
                uuids = self._conditional(context, project_id, deltas,
                                          expire, request_id, consumer_id,
                                          claim)
                if uuids is not None:
                    return uuids
        return self._locked(context, project_id, deltas, expire, request_id,
                            consumer_id, dry_run, devices)

    def _claim_in_statement(self, context, deltas, devices):
        """``(resource class, amount)`` of a device request that the
        conditional path claims itself (of one resource, outside a
        transaction), or None."""
        if len(deltas) != 1 or db_api.in_transaction(context):
            return None
        return self.devices.in_statement(devices)

    def _conditional(self, context, project_id, deltas, expire, request_id,
                     consumer_id, claim=None):
        """The conditional UPDATE and the INSERT of each resource, reading
        no row but, with a ``request_id``, whether it was used before: on
        PostgreSQL and MariaDB all in one statement (outside another
        transaction: it is its own), else one statement each; with a
        ``claim`` (``_claim_in_statement``), the one statement also
        claims the device. None, with nothing written, when the locked
        path must decide."""
        limits = {}
        default = None
        if self._limit_in_sql:
            default = self.model.source.unregistered_limit
        else:
            # Limits from elsewhere (Keystone) are read before any lock.
            limits = self.model.project_limits(context, project_id,
                                               list(deltas))
        now = models.utcnow()
        shared = sql.Reserve(project_id, request_id, now, expire,
                             models.RESERVED, consumer_id, claim is not None,
                             now, default,
                             *((context.user_id, *claim) if claim else ()))
        rows = [sql.Resource(resource, delta, limits.get(resource),
                             uuidutils.generate_uuid())
                for resource, delta in deltas.items()]
        try:
            if one_statement.runs_alone(context):
                statement = self._one_statement(
                    len(rows), request_id is not None, claim is not None)
                if not one_statement.run_alone(
                        statement, statement.binds(shared, *rows)):
                    return None
            else:
                with db_api.writer_connection(context) as conn:
                    self._statement_by_statement(conn, shared, rows, claim)
        except (_Undecided, db_exc.DBDuplicateEntry):
            return None
        return [row.uuid for row in rows]

    def _one_statement(self, count, request_id, claiming):
        # A claiming one's pool rule is the configuration's of the day.
        key = (count, request_id,
               self.devices.steps.pool_prefixes() if claiming else None)
        if key not in self._one_statements:
            dialect = db_api.get_autocommit_engine().dialect
            self._one_statements[key] = (
                one_statement.claiming_reserve(
                    dialect, self._limit, request_id, self.devices.steps)
                if claiming else one_statement.reserve(
                    dialect, self._limit, count, request_id))
        return self._one_statements[key]

    def _statement_by_statement(self, conn, shared, rows, claim):
        """The conditional UPDATEs, then (with a ``claim``) its steps,
        then the INSERTs, each one statement for every resource where the
        driver counts the rows of a batch (``Backend.counts_batch_rows``:
        SQLite, MariaDB)."""
        params = [self._binds(shared, row) for row in rows]
        if (len(params) > 1
                and backends.of(conn).counts_batch_rows(conn.dialect)):
            # Each UPDATE changes at most its one row.
            fit = conn.execute(self._statement,
                               params).rowcount == len(params)
        else:
            fit = all(conn.execute(self._statement, row).rowcount == 1
                      for row in params)
        if not fit or shared.request_id is not None and conn.execute(
                sql.REQUEST_SEEN, params[0]).first() is not None:
            raise _Undecided()
        if claim is not None:
            self._claim_step_by_step(conn, shared)
        conn.execute(sql.INSERT_RESERVATION_OF_USAGE,
                     params if len(params) > 1 else params[0])

    def _claim_step_by_step(self, conn, shared):
        """The claim's steps (``devices.steps``) one statement each, in the
        transaction of ``conn``, which holds the database (SQLite's BEGIN
        IMMEDIATE); raises _Undecided where the one statement would
        refuse."""
        steps = self.devices.steps
        backend = backends.of(conn)
        key = (backend, steps.pool_prefixes())
        if key not in self._claim_steps:
            provider = sa.bindparam('_provider_id', type_=sa.Integer)
            statements = (
                steps.chosen(backend),
                steps.bump(provider, sa.bindparam('_generation',
                                                  type_=sa.Integer)),
                steps.consumer(), steps.allocation(provider))
            self._claim_steps[key] = statements, binds.Binds(
                binds.names_of(*statements), sql.Reserve, sql.Claimed)
        (chosen, bump, *claim), claim_binds = self._claim_steps[key]
        found = conn.execute(chosen, claim_binds(
            shared, sql.Claimed(None, None))).first()
        if found is None or not found.decisive:
            raise _Undecided()
        params = claim_binds(shared, sql.Claimed(found.provider_id,
                                                 found.generation))
        if conn.execute(bump, params).rowcount != 1:
            raise _Undecided()
        for statement in claim:
            conn.execute(statement, params)

    def _locked(self, context, project_id, deltas, expire, request_id,
                consumer_id, dry_run, devices):
        """Lock and read, then decide: any model, any delta, devices, dry
        runs, and the exact refusal."""
        resources = list(deltas)
        with db_api.writer_connection(context) as conn:
            scope = self.model.lock(context, conn, project_id, resources,
                                    create=not dry_run)
            usages = usage_rows.lock(conn, project_id, resources,
                                     create=not dry_run, scope=scope)
            if request_id is not None:
                earlier = _find_request(conn, project_id, request_id, deltas)
                if earlier is not None:
                    return earlier
            now = models.utcnow()
            _check(project_id, deltas, usages, scope, now)
            if dry_run:
                return []
            if devices is not None:
                # Joins this transaction: a lost race for a device retries
                # the whole reserve (the hook raises a deadlock).
                self.devices.claim(context, consumer_id, project_id, devices,
                                   user_id=context.user_id)
            rows = [dict(uuid=uuidutils.generate_uuid(),
                         usage_id=usages[r].id, project_id=project_id,
                         resource=r, delta=d, expire=expire,
                         status=models.RESERVED, request_id=request_id,
                         consumer_id=consumer_id,
                         devices=devices is not None, created_at=now)
                    for r, d in deltas.items()]
            conn.execute(sql.INSERT_RESERVATIONS,
                         rows[0] if len(rows) == 1 else rows)
            for resource, delta in deltas.items():
                if delta > 0:
                    usages[resource].add('reserved', delta)
            usage_rows.write(conn, usages, scope)
        return [row['uuid'] for row in rows]


def _find_request(conn, project_id, request_id, deltas):
    """The uuids of an earlier reserve with this request id, if any."""
    rows = conn.execute(
        sa.select(sql.RESERVATIONS.c.uuid, sql.RESERVATIONS.c.resource,
                  sql.RESERVATIONS.c.delta)
        .where(sql.RESERVATIONS.c.project_id == project_id,
               sql.RESERVATIONS.c.request_id == request_id)
        .order_by(sql.RESERVATIONS.c.resource)).all()
    if not rows:
        return None
    earlier = {row.resource: row.delta for row in rows}
    if earlier != deltas:
        raise exception.RequestIdConflict(
            request_id=request_id, project_id=project_id,
            existing=', '.join('%s: %d' % kv for kv in earlier.items()))
    return [row.uuid for row in rows]


def _check(project_id, deltas, usages, scope, now):
    """Raise OverQuota (or InvalidDelta) unless every delta fits the
    project's limit and whatever else the model's scope holds it to;
    else BudgetExhausted if a positive one is of a row whose budget (the
    project's, or its tree's above it) has no balance left at ``now`` (a
    detach is never refused by a budget)."""
    limits = scope.project_limits
    now_s = meter.seconds(now)
    overs = []
    exhausted = []
    for resource, delta in deltas.items():
        usage = usages[resource]
        if delta < 0:
            if usage.used + delta < 0:
                raise exception.InvalidDelta(
                    resource=resource,
                    reason='%d would take used (%d) below zero'
                           % (delta, usage.used))
            continue
        total = usage.used + usage.reserved + delta
        if total > models.MAX_COUNT:
            raise exception.InvalidDelta(
                resource=resource,
                reason='%d would overflow the count (largest %d)'
                       % (delta, models.MAX_COUNT))
        limit = limits[resource]
        if 0 <= limit < total + usage.promised:
            overs.append(model_protocol.over_entry(
                project_id, resource, 'project', limit, usage, delta))
        over = scope.over(resource, delta)
        if over is not None:
            overs.append(over)
        for holder_id, row in [(project_id, usage)] + [
                (level.holder_id, level.counts)
                for level in scope.levels(resource)]:
            balance = meter.balance_at(row, now_s)
            if balance is not None and balance <= 0:
                exhausted.append((holder_id, resource, balance))
    if overs:
        raise exception.OverQuota(overs=overs)
    if exhausted:
        holder_id, resource, balance = exhausted[0]
        raise units.exhausted(holder_id, resource, now, balance, 0)
