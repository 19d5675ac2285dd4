"""DbQuotaDriver: the ledger's database work.

Locking discipline, the whole of the ledger's concurrency story:

* Locks are taken in one order, so transactions queue rather than
  deadlock: the reservation rows a transaction ends (commit, rollback,
  expiry), then under a hierarchical model the project's root's
  ``tree_usages`` rows, then the project's ``quota_usages`` rows in
  resource order, then ``consumer_usages`` rows. The rare deadlock or lost
  race to create a first row is retried as a whole transaction
  (``db_api.retry_on_conflict``).
* A reservation's status changes only from ``reserved``, and only while
  its row is locked, so each reservation ends exactly once; its
  resource and delta never change, so they may be read unlocked.
* Under the flat model the common cases change each count with one
  conditional UPDATE rather than locking and reading the usage row first:
  a reserve adds to ``reserved`` only where ``used + reserved + delta``
  fits the limit (which the statement reads itself when the limits are in
  this database), and an end moves counts only where none goes below
  zero. When such an UPDATE changes no row (no row yet, over quota, drift,
  or a reserve's request id was seen before), the locked path decides: it
  locks the rows with ``SELECT ... FOR UPDATE``, reads them, and says
  exactly why (a reserve rolls its attempt back first).
* Every read that follows a lock sees all that was committed under it:
  PostgreSQL runs READ COMMITTED, and cyquota sets MySQL/MariaDB sessions
  to READ COMMITTED too (``db_api``).
* Under a hierarchical model (strict-two-level) a transaction locks the
  ``tree_usages`` rows of the project's root before the project's own
  rows, and changes the root's rows by what it changed in the project's
  (``tree_usage``). Reservations in different children of one root queue
  on the root's rows, so the tree check sees every earlier one; under the
  flat model nothing of this runs.

Input is validated by the QuotaEngine before it reaches the driver.
"""

import dataclasses
import datetime

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota.placement import allocations as device_allocations
from cyquota.quota import resources as quota_resources
from cyquota.quota import tree_usage

LOG = logging.getLogger(__name__)

_usages = models.QuotaUsage.__table__
_reservations = models.Reservation.__table__
_consumers = models.ConsumerUsage.__table__
_drift = models.DriftEvent.__table__

# The statements of the hot paths, built once: SQLAlchemy then only binds
# parameters (a statement built per call costs as much CPU as a round trip).
_LOCK_ALL_USAGES = (
    sa.select(_usages.c.id, _usages.c.resource, _usages.c.used,
              _usages.c.reserved)
    .where(_usages.c.project_id == sa.bindparam('project_id'))
    .order_by(_usages.c.resource)
    .with_for_update())
_LOCK_USAGES = _LOCK_ALL_USAGES.where(
    _usages.c.resource.in_(sa.bindparam('resources', expanding=True)))
_INSERT_USAGE = _usages.insert()
_INSERT_RESERVATIONS = _reservations.insert()
# (Bind names of UPDATEs must differ from the column names.)
_WRITE_USAGE = (
    _usages.update()
    .where(_usages.c.id == sa.bindparam('_id'))
    .values(used=sa.bindparam('_used'), reserved=sa.bindparam('_reserved'),
            updated_at=sa.bindparam('_now')))
_THE_USAGE = (_usages.c.project_id == sa.bindparam('_project_id'),
              _usages.c.resource == sa.bindparam('_resource'))
# A reserve's row, its usage row's id read by the INSERT itself.
_INSERT_RESERVATION_OF_USAGE = _reservations.insert().from_select(
    ['usage_id', 'project_id', 'resource', 'uuid', 'delta', 'expire',
     'status', 'request_id', 'consumer_id', 'devices', 'created_at'],
    sa.select(_usages.c.id, _usages.c.project_id, _usages.c.resource,
              *[sa.bindparam('_' + name, type_=_reservations.c[name].type)
                for name in ('uuid', 'delta', 'expire', 'status',
                             'request_id', 'consumer_id', 'devices',
                             'created_at')])
    .where(*_THE_USAGE))
# The end of reserved rows of one resource, all of positive deltas:
# ``_held`` off reserved (unless that would go below zero) and ``_used``
# (``_held`` or 0) onto used.
_END_RESERVED = (
    _usages.update()
    .where(*_THE_USAGE, _usages.c.reserved >= sa.bindparam('_held'))
    .values(reserved=_usages.c.reserved - sa.bindparam('_held'),
            used=_usages.c.used + sa.bindparam('_used'),
            updated_at=sa.bindparam('_now')))
_REQUEST_SEEN = (
    sa.select(_reservations.c.id)
    .where(_reservations.c.project_id == sa.bindparam('_project_id'),
           _reservations.c.request_id == sa.bindparam('_request_id'))
    .limit(1))
_RESERVATION_COLUMNS = (
    _reservations.c.id, _reservations.c.uuid, _reservations.c.resource,
    _reservations.c.delta, _reservations.c.status,
    _reservations.c.consumer_id, _reservations.c.devices)
_FIND_RESERVATIONS = (
    sa.select(*_RESERVATION_COLUMNS)
    .where(_reservations.c.project_id == sa.bindparam('_project_id'),
           _reservations.c.uuid.in_(sa.bindparam('_uuids', expanding=True)))
    # Creation order, so a batch's result never depends on how its uuids
    # happen to sort.
    .order_by(_reservations.c.id))
# By uuid alone, so that InnoDB locks the rows through the uuid index and
# no other (see _LOCK_RESERVED_BY_ID); the project is checked afterwards.
_LOCK_RESERVATIONS = (
    sa.select(_reservations.c.project_id, *_RESERVATION_COLUMNS)
    .where(_reservations.c.uuid.in_(sa.bindparam('_uuids', expanding=True)))
    .order_by(_reservations.c.id)
    .with_for_update())
# Where UPDATE ... RETURNING exists, one statement locks, ends and reads.
_END_RESERVATIONS_RETURNING = (
    _reservations.update()
    .where(_reservations.c.project_id == sa.bindparam('_project_id'),
           _reservations.c.uuid.in_(sa.bindparam('_uuids', expanding=True)),
           _reservations.c.status == models.RESERVED)
    .values(status=sa.bindparam('_status'), updated_at=sa.bindparam('_now'))
    .returning(*_RESERVATION_COLUMNS))
_DUE_RESERVATIONS = (
    sa.select(_reservations.c.id)
    .where(_reservations.c.project_id == sa.bindparam('_project_id'),
           _reservations.c.status == models.RESERVED,
           _reservations.c.expire < sa.bindparam('_now'))
    .order_by(_reservations.c.id)
    .limit(sa.bindparam('_batch')))
# Locked by primary key only: InnoDB locks the index entries a locking read
# passes through, and a secondary index entry locked before its row would
# deadlock with a commit, which locks the row (by uuid) and then changes
# that entry.
_LOCK_RESERVED_BY_ID = (
    sa.select(*_RESERVATION_COLUMNS)
    .where(_reservations.c.id.in_(sa.bindparam('_ids', expanding=True)),
           _reservations.c.status == models.RESERVED)
    .order_by(_reservations.c.id)
    .with_for_update())
_SET_STATUS = (
    _reservations.update()
    .where(_reservations.c.id.in_(sa.bindparam('_ids', expanding=True)))
    .values(status=sa.bindparam('_status'),
            updated_at=sa.bindparam('_now')))
_ADD_TO_CONSUMER = (
    _consumers.update()
    .where(_consumers.c.project_id == sa.bindparam('_project_id'),
           _consumers.c.resource == sa.bindparam('_resource'),
           _consumers.c.consumer_id == sa.bindparam('_consumer_id'),
           _consumers.c.used + sa.bindparam('_delta') >= 0)
    .values(used=_consumers.c.used + sa.bindparam('_delta'),
            updated_at=sa.bindparam('_now')))


def _reserve_if_fits(limit):
    """The UPDATE adding ``_delta`` to a usage row's reserved count only if
    the total stays within ``limit`` (an SQL expression; below zero:
    unlimited) and the largest count."""
    total = (_usages.c.used + _usages.c.reserved
             + sa.cast(sa.bindparam('_delta'), sa.BigInteger))
    return (_usages.update()
            .where(*_THE_USAGE, total <= models.MAX_COUNT,
                   sa.or_(limit < 0, total <= limit))
            .values(reserved=_usages.c.reserved + sa.bindparam('_delta'),
                    updated_at=sa.bindparam('_now')))


class _Undecided(Exception):
    """A conditional UPDATE changed no row: the locked path decides."""


@dataclasses.dataclass
class _Usage:
    """A locked ``quota_usages`` row, changed in memory, then written."""

    id: int
    resource: str
    used: int
    reserved: int
    dirty: bool = False

    def add(self, field, delta):
        """Add ``delta`` to ``field``, stopping at zero; returns what was
        applied."""
        current = getattr(self, field)
        applied = max(delta, -current)
        setattr(self, field, current + applied)
        self.dirty = self.dirty or applied != 0
        return applied


def _usage_dict(usage, limit):
    available = -1 if limit < 0 else max(
        0, limit - usage.used - usage.reserved)
    return {'limit': limit, 'used': usage.used, 'reserved': usage.reserved,
            'available': available}


class DbQuotaDriver:
    """Keeps ``quota_usages`` and ``reservations`` right.

    :param model: the enforcement model that gives each project's limits.
    """

    def __init__(self, model):
        self.model = model
        limit = None if model.hierarchical else model.limit_sql()
        #: Whether the reserve's UPDATE reads the limit itself.
        self._limit_in_sql = limit is not None
        self._reserve_statement = _reserve_if_fits(
            sa.bindparam('_limit') if limit is None else limit)

    # -- reading -----------------------------------------------------------

    @db_api.retry_on_conflict
    def get_project_usage(self, context, project_id, resources):
        """``{resource: {limit, used, reserved, available}}``; under a
        hierarchical model each resource also has ``tree``: ``{root_id,
        limit, used, reserved, available}`` of the project's whole tree."""
        tree = None
        with db_api.reader(context) as session:
            rows = session.execute(
                sa.select(_usages.c.resource, _usages.c.used,
                          _usages.c.reserved)
                .where(_usages.c.project_id == project_id)).all()
            found = {r.resource: _Usage(0, r.resource, r.used, r.reserved)
                     for r in rows}
            if self.model.hierarchical:
                tree = tree_usage.TreeUsage.read(
                    context, session, self.model.source,
                    self.model.tree(context, project_id, resources),
                    resources)
                limits = tree.tree.project_limits
            else:
                limits = self.model.project_limits(context, project_id,
                                                   resources)
        result = {r: _usage_dict(found.get(r) or _Usage(0, r, 0, 0),
                                 limits[r])
                  for r in resources}
        if tree is not None:
            for r in resources:
                result[r]['tree'] = dict(
                    root_id=tree.root_id,
                    **_usage_dict(tree.rows[r], tree.tree.root_limits[r]))
        return result

    @db_api.retry_on_conflict
    def list_usages(self, context, resources, project_id=None,
                    resource=None, limit=1000, marker=None):
        """Usage rows with their limits, ordered by (project, resource).

        ``marker`` is the ``(project_id, resource)`` of the last row of the
        previous page.
        """
        query = (sa.select(_usages.c.project_id, _usages.c.resource,
                           _usages.c.used, _usages.c.reserved)
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
            rows = session.execute(query).all()
            limits = {}
            for row in rows:
                if row.project_id not in limits:
                    limits[row.project_id] = self.model.project_limits(
                        context, row.project_id, resources)
                usage = _Usage(0, row.resource, row.used, row.reserved)
                result.append(dict(
                    project_id=row.project_id, resource=row.resource,
                    **_usage_dict(usage, limits[row.project_id][
                        row.resource])))
        return result

    @db_api.retry_on_conflict
    def list_reservations(self, context, project_id=None, status=None,
                          limit=1000):
        """Reservation rows as dicts, newest first."""
        query = sa.select(_reservations).order_by(_reservations.c.id.desc())
        if project_id is not None:
            query = query.where(_reservations.c.project_id == project_id)
        if status is not None:
            query = query.where(_reservations.c.status == status)
        with db_api.reader(context) as session:
            rows = session.execute(query.limit(limit)).mappings().all()
        return [dict(r) for r in rows]

    # -- the ledger operations ---------------------------------------------

    @db_api.retry_on_conflict
    def reserve(self, context, project_id, deltas, expire, request_id=None,
                consumer_id=None, dry_run=False, devices=None):
        """Hold ``deltas`` for ``project_id`` until commit, rollback or
        ``expire``; all resources or none. Returns reservation uuids in
        resource order (``[]`` for a dry run, which writes nothing).
        ``devices``: a placement DeviceRequest to allocate to
        ``consumer_id`` in the same transaction."""
        if (not dry_run and devices is None and not self.model.hierarchical
                and min(deltas.values()) > 0):
            uuids = self._reserve_unread(context, project_id, deltas, expire,
                                         request_id, consumer_id)
            if uuids is not None:
                return uuids
        return self._reserve_locked(context, project_id, deltas, expire,
                                    request_id, consumer_id, dry_run,
                                    devices)

    def _reserve_unread(self, context, project_id, deltas, expire,
                        request_id, consumer_id):
        """The flat model's reserve of positive deltas with one conditional
        UPDATE per resource and one INSERT, reading no row but, with a
        ``request_id``, whether it was used before. None, with nothing
        written, when a usage row is missing, a delta does not fit or the
        request id was used before: the locked path then decides."""
        params = dict(_project_id=project_id, _request_id=request_id,
                      _now=models.utcnow())
        limits = {}
        if self._limit_in_sql:
            params['_default'] = self.model.source.unregistered_limit
        else:
            # Limits from elsewhere (Keystone) are read before any lock.
            limits = self.model.project_limits(context, project_id,
                                               list(deltas))
        rows = [dict(params, _resource=resource, _delta=delta,
                     _limit=limits.get(resource),
                     _uuid=uuidutils.generate_uuid(), _expire=expire,
                     _status=models.RESERVED, _consumer_id=consumer_id,
                     _devices=False, _created_at=params['_now'])
                for resource, delta in deltas.items()]
        try:
            with db_api.writer_connection(context) as conn:
                for row in rows:
                    if conn.execute(self._reserve_statement,
                                    row).rowcount != 1:
                        raise _Undecided()
                if request_id is not None and conn.execute(
                        _REQUEST_SEEN, params).first() is not None:
                    raise _Undecided()
                for row in rows:
                    conn.execute(_INSERT_RESERVATION_OF_USAGE, row)
        except (_Undecided, db_exc.DBDuplicateEntry):
            return None
        return [row['_uuid'] for row in rows]

    def _reserve_locked(self, context, project_id, deltas, expire,
                        request_id, consumer_id, dry_run, devices):
        """The reserve that locks and reads the usage rows first: any
        model, any delta, devices, dry runs, and the exact refusal."""
        resources = list(deltas)
        with db_api.writer_connection(context) as conn:
            tree = self._lock_tree(context, conn, project_id, resources,
                                   create=not dry_run)
            usages = self._lock_usages(conn, project_id, resources,
                                       create=not dry_run, tree=tree)
            if request_id is not None:
                earlier = self._find_request(conn, project_id, request_id,
                                             deltas)
                if earlier is not None:
                    return earlier
            self._check(context, project_id, deltas, usages, tree)
            if dry_run:
                return []
            if devices is not None:
                # Joins this transaction: a lost race for a device retries
                # the whole reserve (AllocationRaced is a deadlock).
                device_allocations.claim(context, consumer_id, project_id,
                                         devices, user_id=context.user_id)
            now = models.utcnow()
            rows = [dict(uuid=uuidutils.generate_uuid(),
                         usage_id=usages[r].id, project_id=project_id,
                         resource=r, delta=d, expire=expire,
                         status=models.RESERVED, request_id=request_id,
                         consumer_id=consumer_id,
                         devices=devices is not None, created_at=now)
                    for r, d in deltas.items()]
            conn.execute(_INSERT_RESERVATIONS,
                         rows[0] if len(rows) == 1 else rows)
            for resource, delta in deltas.items():
                if delta > 0:
                    usages[resource].add('reserved', delta)
            self._write_usages(conn, usages, tree)
        return [row['uuid'] for row in rows]

    def commit(self, context, project_id, uuids):
        """Move reserved counts to used. Committing a committed reservation
        does nothing; a rolled back or expired one is a conflict."""
        self._finish(context, project_id, uuids, models.COMMITTED)

    def rollback(self, context, project_id, uuids):
        """Give reserved counts back. Rolling back a rolled back or expired
        reservation does nothing; a committed one is a conflict."""
        self._finish(context, project_id, uuids, models.ROLLED_BACK)

    @db_api.retry_on_conflict
    def release(self, context, project_id, deltas, consumer_id=None):
        """Take positive ``deltas`` off ``used`` at once (a detach).

        A count never goes below zero: what could not be taken is recorded
        as a drift event. Returns the uuids of the committed release rows.
        """
        resources = list(deltas)
        now = models.utcnow()
        with db_api.writer(context) as session:
            holds_devices = (consumer_id is not None and
                             device_allocations.holds_any(context,
                                                          consumer_id))
            if holds_devices:
                # Whether the consumer ends up holding nothing depends on
                # all its resources: lock every row of the project.
                resources = sorted(set(resources) | set(
                    quota_resources.known_resources()))
            tree = self._lock_tree(context, session, project_id, resources)
            usages = self._lock_usages(session, project_id, resources,
                                       create=True, tree=tree)
            rows = []
            for resource, amount in deltas.items():
                usage = usages[resource]
                applied = -usage.add('used', -amount)
                if applied < amount:
                    self._record_drift(
                        session, project_id, resource, consumer_id,
                        'release_below_zero', amount, applied,
                        'release of %d with only %d used' % (amount,
                                                            applied))
                self._add_consumer_usage(session, project_id, resource,
                                         consumer_id, -amount)
                rows.append(dict(uuid=uuidutils.generate_uuid(),
                                 usage_id=usage.id, project_id=project_id,
                                 resource=resource, delta=-applied,
                                 expire=None, status=models.COMMITTED,
                                 request_id=None, consumer_id=consumer_id,
                                 created_at=now, updated_at=now))
            session.execute(_reservations.insert(), rows)
            self._write_usages(session, usages, tree)
            if holds_devices and not self._consumer_holds(
                    session, project_id, consumer_id):
                device_allocations.free(context, consumer_id)
        return [row['uuid'] for row in rows]

    def expire(self, context):
        """Roll back every reserved row whose expiry has passed, project by
        project; returns how many expired. Safe to run in several
        conductors at once: each row is expired exactly once."""
        now = models.utcnow()
        total = 0
        while True:
            with db_api.reader(context) as session:
                projects = session.execute(
                    sa.select(_reservations.c.project_id).distinct()
                    .where(_reservations.c.status == models.RESERVED,
                           _reservations.c.expire < now)
                    .limit(CONF.quota.batch_size)).scalars().all()
            if not projects:
                return total
            for project_id in projects:
                total += self._expire_project(context, project_id, now)

    def purge(self, context):
        """Delete terminal reservation rows and resolved drift events older
        than ``[quota] reservation_retention``; returns how many rows."""
        before = models.utcnow() - datetime.timedelta(
            seconds=CONF.quota.reservation_retention)
        total = 0
        for table, where in (
                (_reservations, sa.and_(
                    _reservations.c.status.in_(models.TERMINAL_STATUSES),
                    _reservations.c.updated_at < before)),
                (_drift, _drift.c.resolved_at < before)):
            while True:
                with db_api.writer(context) as session:
                    ids = session.execute(
                        sa.select(table.c.id).where(where)
                        .limit(CONF.quota.batch_size)).scalars().all()
                    if ids:
                        session.execute(
                            table.delete().where(table.c.id.in_(ids)))
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
            tree = self._lock_tree(context, session, project_id, resources)
            usages = self._lock_usages(session, project_id, resources,
                                       create=True, tree=tree)
            expected = expected_counts(context, project_id, resources)
            for resource in resources:
                usage = usages[resource]
                for field, value in expected[resource].items():
                    old = getattr(usage, field)
                    if old != value:
                        usage.add(field, value - old)
                        changes.append((resource, field, old, value))
            self._write_usages(session, usages, tree)
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
            tree = self._lock_tree(context, session, project_id, resources)
            self._lock_usages(session, project_id, resources, create=True,
                              tree=tree)
            for (resource, consumer_id), amount in sorted(holdings.items()):
                where = sa.and_(_consumers.c.project_id == project_id,
                                _consumers.c.resource == resource,
                                _consumers.c.consumer_id == consumer_id)
                old = session.execute(
                    sa.select(_consumers.c.used).where(where)).scalar()
                if old == amount or (old is None and amount == 0):
                    continue
                if old is None:
                    session.execute(_consumers.insert().values(
                        project_id=project_id, resource=resource,
                        consumer_id=consumer_id, used=amount,
                        created_at=models.utcnow()))
                else:
                    session.execute(_consumers.update().where(where).values(
                        used=amount, updated_at=models.utcnow()))
                changes.append((resource, consumer_id, old or 0, amount))
        return changes

    # -- steps -------------------------------------------------------------

    @db_api.retry_on_conflict
    def _finish(self, context, project_id, uuids, target):
        with db_api.writer_connection(context) as conn:
            pending = self._end_reservations(conn, project_id, uuids, target)
            if pending:
                self._apply_ends(context, conn, project_id, pending, target)
                if target != models.COMMITTED:
                    self._free_devices(context, pending)

    def _end_reservations(self, conn, project_id, uuids, target):
        """Lock the reservations and set those still reserved to
        ``target``; returns those, in creation order. Not found or already
        ended the other way raise (and the transaction rolls back)."""
        params = dict(_project_id=project_id, _uuids=list(uuids))
        now = models.utcnow()
        if conn.dialect.update_returning:
            pending = sorted(conn.execute(
                _END_RESERVATIONS_RETURNING,
                dict(params, _status=target, _now=now)).all(),
                key=lambda row: row.id)
            ended = {row.uuid for row in pending}
            others = []
            if len(ended) < len(uuids):
                others = conn.execute(_FIND_RESERVATIONS, dict(
                    params, _uuids=[u for u in uuids
                                    if u not in ended])).all()
        else:
            rows = [row for row in conn.execute(_LOCK_RESERVATIONS, params)
                    if row.project_id == project_id]
            pending = [row for row in rows if row.status == models.RESERVED]
            others = [row for row in rows if row.status != models.RESERVED]
            if pending:
                conn.execute(_SET_STATUS, dict(
                    _ids=[row.id for row in pending], _status=target,
                    _now=now))
        missing = (set(uuids) - {row.uuid for row in pending}
                   - {row.uuid for row in others})
        if missing:
            raise exception.ReservationNotFound(
                uuids=', '.join(sorted(missing)), project_id=project_id)
        for row in others:
            if not self._already_done(row.status, target):
                raise exception.ReservationConflict(
                    action=('commit' if target == models.COMMITTED
                            else 'roll back'),
                    uuid=row.uuid, status=row.status)
        return pending

    @staticmethod
    def _already_done(status, target):
        # A retried commit finds it committed; a rollback of an expired
        # reservation finds the quota already given back.
        if target == models.COMMITTED:
            return status == models.COMMITTED
        return status in (models.ROLLED_BACK, models.EXPIRED)

    def _apply_ends(self, context, conn, project_id, rows, target):
        """Apply the end (``target``) of reservation rows, already set to
        it, to the counts and, for a commit, to what consumers hold."""
        if self.model.hierarchical:
            self._apply_ends_locked(context, conn, project_id, rows, target)
        else:
            by_resource = {}
            for row in rows:
                by_resource.setdefault(row.resource, []).append(row)
            now = models.utcnow()
            for resource, group in sorted(by_resource.items()):
                held = sum(row.delta for row in group)
                used = held if target == models.COMMITTED else 0
                # Negative deltas are applied row by row, in creation
                # order, as each may stop at zero.
                if min(row.delta for row in group) < 0 or conn.execute(
                        _END_RESERVED, dict(
                            _project_id=project_id, _resource=resource,
                            _held=held, _used=used,
                            _now=now)).rowcount != 1:
                    # A count would go below zero: drift, told row by row.
                    self._apply_ends_locked(context, conn, project_id,
                                            group, target)
        if target == models.COMMITTED:
            for row in rows:
                self._add_consumer_usage(conn, project_id, row.resource,
                                         row.consumer_id, row.delta)

    def _apply_ends_locked(self, context, conn, project_id, rows, target):
        """``_apply_ends``' counts with the usage (and tree) rows locked and
        read: under a hierarchical model, and to record drift."""
        resources = sorted({row.resource for row in rows})
        tree = self._lock_tree(context, conn, project_id, resources)
        usages = self._lock_usages(conn, project_id, resources, create=True,
                                   tree=tree)
        for row in rows:
            self._settle(conn, project_id, usages[row.resource], row,
                         target)
        self._write_usages(conn, usages, tree)

    def _settle(self, session, project_id, usage, row, target):
        """Apply one reserved row's end (commit, rollback or expiry) to its
        locked usage."""
        if row.delta > 0:
            given = -usage.add('reserved', -row.delta)
            if given < row.delta:
                self._record_drift(
                    session, project_id, row.resource, row.consumer_id,
                    'reserved_below_zero', row.delta, given,
                    'reservation %s held more than reserved' % row.uuid)
        if target != models.COMMITTED:
            return
        applied = usage.add('used', row.delta)
        if applied != row.delta:
            self._record_drift(
                session, project_id, row.resource, row.consumer_id,
                'used_below_zero', row.delta, applied,
                'commit of reservation %s' % row.uuid)

    @db_api.retry_on_conflict
    def _expire_project(self, context, project_id, now):
        with db_api.writer_connection(context) as conn:
            due = conn.execute(_DUE_RESERVATIONS, dict(
                _project_id=project_id, _now=now,
                _batch=CONF.quota.batch_size)).scalars().all()
            rows = conn.execute(_LOCK_RESERVED_BY_ID, dict(
                _ids=due)).all() if due else []
            if rows:
                conn.execute(_SET_STATUS, dict(
                    _ids=[row.id for row in rows], _status=models.EXPIRED,
                    _now=now))
                self._apply_ends(context, conn, project_id, rows,
                                 models.EXPIRED)
                self._free_devices(context, rows)
        if rows:
            LOG.info('Expired %d reservation(s) of project %s',
                     len(rows), project_id)
        return len(rows)

    @staticmethod
    def _free_devices(context, rows):
        """Give back the devices claimed by reserves that did not commit."""
        for consumer_id in sorted({r.consumer_id for r in rows
                                   if r.devices}):
            device_allocations.free(context, consumer_id)

    @staticmethod
    def _consumer_holds(session, project_id, consumer_id):
        """Whether ``consumer_id`` still uses or has reserved anything."""
        used = session.execute(
            sa.select(sa.func.coalesce(sa.func.sum(_consumers.c.used), 0))
            .where(_consumers.c.project_id == project_id,
                   _consumers.c.consumer_id == consumer_id)).scalar()
        pending = session.execute(
            sa.select(sa.func.count()).select_from(_reservations)
            .where(_reservations.c.project_id == project_id,
                   _reservations.c.consumer_id == consumer_id,
                   _reservations.c.status == models.RESERVED)).scalar()
        return bool(used or pending)

    def _lock_tree(self, context, session, project_id, resources=None,
                   create=True):
        """Under a hierarchical model, lock the tree usage rows of the
        project's root (``resources``, or every counted one); with
        ``create``, register an unknown project as a root and insert the
        missing rows. None under the flat model."""
        if not self.model.hierarchical:
            return None
        resources = list(resources or quota_resources.known_resources())
        tree = self.model.tree(context, project_id, resources,
                               register=create)
        return tree_usage.TreeUsage.lock(context, session, self.model.source,
                                         tree, resources, create)

    def _lock_usages(self, session, project_id, resources=None,
                     create=False, tree=None):
        """Lock a project's usage rows (``resources``, or all), in resource
        order; with ``create``, insert the missing ones. ``tree``: the
        project's locked tree usage, told the counts as locked."""
        if resources is None:
            rows = session.execute(_LOCK_ALL_USAGES,
                                   dict(project_id=project_id))
        else:
            rows = session.execute(_LOCK_USAGES, dict(
                project_id=project_id, resources=list(resources)))
        usages = {row.resource: _Usage(*row) for row in rows}
        for resource in resources or ():
            if resource in usages:
                continue
            if not create:
                usages[resource] = _Usage(None, resource, 0, 0)
                continue
            # A concurrent first use of the pair makes this insert fail on
            # the unique constraint; the whole transaction is retried.
            result = session.execute(_INSERT_USAGE, dict(
                project_id=project_id, resource=resource, used=0, reserved=0,
                created_at=models.utcnow()))
            usages[resource] = _Usage(result.inserted_primary_key[0],
                                      resource, 0, 0)
        if tree is not None:
            tree.track(usages)
        return usages

    @staticmethod
    def _find_request(session, project_id, request_id, deltas):
        """The uuids of an earlier reserve with this request id, if any."""
        rows = session.execute(
            sa.select(_reservations.c.uuid, _reservations.c.resource,
                      _reservations.c.delta)
            .where(_reservations.c.project_id == project_id,
                   _reservations.c.request_id == request_id)
            .order_by(_reservations.c.resource)).all()
        if not rows:
            return None
        earlier = {row.resource: row.delta for row in rows}
        if earlier != deltas:
            raise exception.RequestIdConflict(
                request_id=request_id, project_id=project_id,
                existing=', '.join('%s: %d' % kv for kv in earlier.items()))
        return [row.uuid for row in rows]

    def _check(self, context, project_id, deltas, usages, tree=None):
        """Raise OverQuota (or InvalidDelta) unless every delta fits the
        project's limit and, with a ``tree``, the root's limit too."""
        if tree is None:
            limits = self.model.project_limits(context, project_id,
                                               list(deltas))
        else:
            limits = tree.tree.project_limits
        overs = []
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
            if 0 <= limit < total:
                overs.append(dict(project_id=project_id, resource=resource,
                                  scope='project', limit=limit,
                                  used=usage.used, reserved=usage.reserved,
                                  requested=delta))
            over = tree.over(resource, delta) if tree is not None else None
            if over is not None:
                overs.append(over)
        if overs:
            raise exception.OverQuota(overs=overs)

    @staticmethod
    def _write_usages(session, usages, tree=None):
        now = models.utcnow()
        changed = [dict(_id=u.id, _used=u.used, _reserved=u.reserved,
                        _now=now)
                   for u in usages.values() if u.dirty]
        if changed:
            session.execute(_WRITE_USAGE,
                            changed[0] if len(changed) == 1 else changed)
            if tree is not None:
                tree.write(session, usages)

    def _add_consumer_usage(self, session, project_id, resource, consumer_id,
                            delta):
        """Add ``delta`` to what ``consumer_id`` holds, stopping at zero.

        Runs under the project's usage row lock, so the row's read, insert
        and update cannot race.
        """
        consumer = consumer_id or ''
        updated = session.execute(_ADD_TO_CONSUMER, dict(
            _project_id=project_id, _resource=resource, _consumer_id=consumer,
            _delta=delta, _now=models.utcnow())).rowcount
        if updated:
            return
        where = sa.and_(_consumers.c.project_id == project_id,
                        _consumers.c.resource == resource,
                        _consumers.c.consumer_id == consumer)
        if delta > 0:
            session.execute(_consumers.insert().values(
                project_id=project_id, resource=resource,
                consumer_id=consumer, used=delta,
                created_at=models.utcnow()))
            return
        held = session.execute(
            sa.select(_consumers.c.used).where(where)).scalar()
        if held:
            session.execute(_consumers.update().where(where).values(
                used=0, updated_at=models.utcnow()))
        self._record_drift(
            session, project_id, resource, consumer_id,
            'consumer_release_below_zero', -delta, held or 0,
            'consumer %r held %d' % (consumer, held or 0))

    @staticmethod
    def _record_drift(session, project_id, resource, consumer_id, kind,
                      requested, applied, detail):
        LOG.warning('Quota drift in project %s, %s: %s (%s)', project_id,
                    resource, kind, detail)
        session.execute(_drift.insert().values(
            project_id=project_id, resource=resource,
            consumer_id=consumer_id, kind=kind, requested=requested,
            applied=applied, detail=detail[:1024],
            created_at=models.utcnow()))
