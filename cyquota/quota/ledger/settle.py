"""Settle reservations: commit, roll back, expire.

A reservation's status changes only from ``reserved``, and only while its
row is locked, so each reservation ends exactly once. Ending locks the
reservation rows first (the ledger's lock order), then applies the end to
the counts: for each resource with one relative UPDATE that takes
nothing below zero (all resources in one statement where the driver
counts the rows of a batch: SQLite); otherwise (drift, a model whose rule
spans more than the project's rows) with the rows locked and read. On
PostgreSQL and MariaDB the common commit or rollback is one statement
(``one_statement`` tells how, and which ends it serves).

A reservation is expired from its ``expire`` time on, whether or not the
periodic sweep has run: a commit of one that is due ends it as expired
(its quota given back) and is refused as a conflict.
"""

import datetime

from oslo_log import log as logging
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import backends
from cyquota.db import models
from cyquota import exception
from cyquota.quota.ledger import binds
from cyquota.quota.ledger import consumers
from cyquota.quota.ledger import one_statement
from cyquota.quota.ledger import statements as sql
from cyquota.quota.ledger import usage as usage_rows

LOG = logging.getLogger(__name__)

# The ``due_before`` of a rollback: no reservation is due before it, so a
# rollback ends every one as rolled back, expired or not.
_NONE_DUE = datetime.datetime(1970, 1, 1)


def _binds(statement, fields):
    return binds.Binds(binds.names_of(statement), fields)


# The dicts of the binds of each statement of the steps.
_ENDING = _binds(sql.END_RESERVATIONS_RETURNING, sql.End)
_FINDING = _binds(sql.FIND_RESERVATIONS, sql.End)
_LOCKING = _binds(sql.LOCK_RESERVATIONS, sql.End)
_CHANGING = _binds(sql.SET_STATUS, sql.Change)
_LOCKING_BY_ID = _binds(sql.LOCK_RESERVED_BY_ID, sql.Change)
_MOVING = _binds(sql.END_RESERVED, sql.Move)
_DUE = _binds(sql.DUE_RESERVATIONS, sql.Due)


class _Due(Exception):
    """A commit found reservations past their expiry (row ids)."""

    def __init__(self, rows):
        super().__init__()
        self.rows = rows


class _Drift(Exception):
    """A count of a batch would have gone below zero: the end is made
    again, resource by resource, to find which."""


class Settle:
    """Commit, rollback and expiry of one enforcement model.

    :param model: the enforcement model (``limits.model``).
    :param devices: the device hook: ``free`` gives back what reserves
        that did not commit had claimed.
    """

    def __init__(self, model, devices):
        self.model = model
        self.devices = devices
        #: The one-statement ends, by (target status, number of
        #: reservations).
        self._one_statements = {}

    def commit(self, context, project_id, uuids):
        """Move reserved counts to used; returns the uuids this call
        committed. Committing a committed reservation does nothing; a
        rolled back or expired one, or one past its expiry, is a
        conflict."""
        try:
            return self._finish(context, project_id, uuids,
                                models.COMMITTED)
        except _Due as due:
            self._expire_rows(context, project_id, [r.id for r in due.rows],
                              models.utcnow())
            raise exception.ReservationConflict(
                action='commit', uuid=due.rows[0].uuid,
                status=models.EXPIRED)

    def rollback(self, context, project_id, uuids):
        """Give reserved counts back; returns the uuids this call rolled
        back. Rolling back a rolled back or expired reservation does
        nothing; a committed one is a conflict."""
        return self._finish(context, project_id, uuids, models.ROLLED_BACK)

    def expire(self, context):
        """Roll back every reserved row whose expiry has passed, project by
        project; returns how many expired. Safe to run in several
        conductors at once: each row is expired exactly once."""
        now = models.utcnow()
        total = 0
        while True:
            with db_api.reader(context) as session:
                projects = session.execute(
                    sa.select(sql.RESERVATIONS.c.project_id).distinct()
                    .where(sql.RESERVATIONS.c.status == models.RESERVED,
                           sql.RESERVATIONS.c.expire < now)
                    .limit(CONF.quota.batch_size)).scalars().all()
            if not projects:
                return total
            for project_id in projects:
                with db_api.reader(context) as session:
                    due = session.execute(sql.DUE_RESERVATIONS, _DUE(
                        sql.Due(project_id, now, CONF.quota.batch_size))
                    ).scalars().all()
                total += self._expire_rows(context, project_id, due, now)

    # -- steps -------------------------------------------------------------

    def _finish(self, context, project_id, uuids, target):
        """End ``uuids`` as ``target``; returns those this call ended (not
        those a call before it had)."""
        if (self.model.decides_by_own_row
                and one_statement.runs_alone(context)
                and self._end_alone(project_id, uuids, target)):
            return uuids
        ended = self._end_step_by_step(context, project_id, uuids, target)
        return [row.uuid for row in ended]

    @db_api.retry_on_conflict
    def _end_alone(self, project_id, uuids, target):
        """The common end as one statement, a transaction of its own
        (``one_statement``); whether it ended ``uuids``, else nothing was
        written and the step-by-step end decides."""
        key = (target, len(uuids))
        if key not in self._one_statements:
            self._one_statements[key] = one_statement.end(
                *key, db_api.get_autocommit_engine().dialect)
        statement = self._one_statements[key]
        now = models.utcnow()
        # In one order, whatever the caller's: two ends of the same
        # reservations lock them alike.
        ends = sql.End(project_id, sorted(uuids), target, now,
                       now if target == models.COMMITTED else _NONE_DUE)
        return one_statement.run_alone(statement, statement.binds(
            ends, *map(sql.Ended, ends.uuids)))

    def _end_step_by_step(self, context, project_id, uuids, target):
        try:
            return self._end_steps(context, project_id, uuids, target,
                                   together=True)
        except _Drift:
            return self._end_steps(context, project_id, uuids, target,
                                   together=False)

    @db_api.retry_on_conflict
    def _end_steps(self, context, project_id, uuids, target, together):
        with db_api.writer_connection(context) as conn:
            pending = self._end_reservations(conn, project_id, uuids, target)
            if pending:
                self._apply_ends(context, conn, project_id, pending, target,
                                 together)
                if target != models.COMMITTED:
                    self._free_devices(context, pending)
        return pending

    def _end_reservations(self, conn, project_id, uuids, target):
        """Lock the reservations and set those still reserved to
        ``target``; returns those, in creation order. Not found, already
        ended the other way, or (for a commit) due raise, and the
        transaction rolls back."""
        now = models.utcnow()
        ends = sql.End(project_id, list(uuids), target, now,
                       now if target == models.COMMITTED else _NONE_DUE)
        if backends.of(conn).returns_from_update(conn.dialect):
            pending = conn.execute(sql.END_RESERVATIONS_RETURNING,
                                   _ENDING(ends)).all()
            pending.sort(key=lambda row: row.id)
            ended = {row.uuid for row in pending}
            others = []
            if len(ended) < len(uuids):
                others = conn.execute(sql.FIND_RESERVATIONS, _FINDING(
                    ends._replace(uuids=[u for u in uuids
                                         if u not in ended]))).all()
        else:
            rows = [row for row in conn.execute(sql.LOCK_RESERVATIONS,
                                                _LOCKING(ends))
                    if row.project_id == project_id]
            pending = [row for row in rows if row.status == models.RESERVED
                       and row.expire >= ends.due_before]
            others = [row for row in rows if row not in pending]
            if pending:
                conn.execute(sql.SET_STATUS, _CHANGING(sql.Change(
                    [row.id for row in pending], target, now)))
        missing = (set(uuids) - {row.uuid for row in pending}
                   - {row.uuid for row in others})
        if missing:
            raise exception.ReservationNotFound(
                uuids=', '.join(sorted(missing)), project_id=project_id)
        due = [row for row in others if row.status == models.RESERVED]
        for row in others:
            if row not in due and not _already_done(row.status, target):
                raise exception.ReservationConflict(
                    action=('commit' if target == models.COMMITTED
                            else 'roll back'),
                    uuid=row.uuid, status=row.status)
        if due:
            raise _Due(due)
        return pending

    def _apply_ends(self, context, conn, project_id, rows, target,
                    together=False):
        """Apply the end (``target``) of reservation rows, already set to
        it, to the counts and, for a commit, to what consumers hold.
        ``together``: move the counts of every resource, and what the
        consumers give back, in one statement each where the driver
        counts the rows of a batch (SQLite, MariaDB); if one would go
        below zero, raise ``_Drift`` for the caller to start again
        without it."""
        if not self.model.decides_by_own_row:
            self._apply_ends_locked(context, conn, project_id, rows, target)
        else:
            by_resource: dict[str, list] = {}
            for row in rows:
                by_resource.setdefault(row.resource, []).append(row)
            now = models.utcnow()
            commit = target == models.COMMITTED
            moves = []
            for resource, group in sorted(by_resource.items()):
                held = sum(row.delta for row in group if row.delta > 0)
                taken = sum(row.delta for row in group if row.delta < 0)
                moves.append(sql.Move(
                    project_id, resource, held, taken if commit else 0,
                    held + taken if commit else 0, now))
            params = [_MOVING(move) for move in moves]
            if (together and len(moves) > 1 and backends.of(
                    conn).counts_batch_rows(conn.dialect)):
                # Each UPDATE changes at most its one usage row.
                if conn.execute(sql.END_RESERVED, params
                                ).rowcount != len(moves):
                    raise _Drift()
            else:
                for move, moved in zip(moves, params):
                    if conn.execute(sql.END_RESERVED, moved).rowcount != 1:
                        # A count would go below zero: drift, told row by
                        # row.
                        self._apply_ends_locked(
                            context, conn, project_id,
                            by_resource[move.resource], target)
        if target == models.COMMITTED and not consumers.add_ended(
                conn, project_id, rows, together):
            raise _Drift()

    def _apply_ends_locked(self, context, conn, project_id, rows, target):
        """``_apply_ends``' counts with the model's rows and the usage rows
        locked and read."""
        resources = sorted({row.resource for row in rows})
        scope = self.model.lock(context, conn, project_id, resources,
                                create=True)
        usages = usage_rows.lock(conn, project_id, resources, create=True,
                                 scope=scope)
        for row in rows:
            _settle(conn, project_id, usages[row.resource], row, target)
        usage_rows.write(conn, usages, scope)

    @db_api.retry_on_conflict
    def _expire_rows(self, context, project_id, ids, now):
        """Expire the rows of ``ids`` still reserved; returns how many."""
        if not ids:
            return 0
        with db_api.writer_connection(context) as conn:
            locking = backends.of(conn).through_index(
                sql.LOCK_RESERVED_BY_ID, sql.RESERVATIONS, 'PRIMARY')
            rows = conn.execute(locking, _LOCKING_BY_ID(
                sql.Change(ids, models.EXPIRED, now))).all()
            if rows:
                conn.execute(sql.SET_STATUS, _CHANGING(sql.Change(
                    [row.id for row in rows], models.EXPIRED, now)))
                self._apply_ends(context, conn, project_id, rows,
                                 models.EXPIRED)
                self._free_devices(context, rows)
        if rows:
            LOG.info('Expired %d reservation(s) of project %s',
                     len(rows), project_id)
        return len(rows)

    def _free_devices(self, context, rows):
        """Give back the devices claimed by reserves that did not commit."""
        for consumer_id in sorted({r.consumer_id for r in rows
                                   if r.devices}):
            self.devices.free(context, consumer_id)


def _already_done(status, target):
    # A retried commit finds it committed; a rollback of an expired
    # reservation finds the quota already given back.
    if target == models.COMMITTED:
        return status == models.COMMITTED
    return status in (models.ROLLED_BACK, models.EXPIRED)


def _settle(conn, project_id, usage, row, target):
    """Apply one reserved row's end (commit, rollback or expiry) to its
    locked usage."""
    if row.delta > 0:
        given = usage.take('reserved', row.delta)
        if given < row.delta:
            usage_rows.record_drift(
                conn, project_id, row.resource, row.consumer_id,
                'reserved_below_zero', row.delta, given,
                'reservation %s held more than reserved' % row.uuid)
    if target != models.COMMITTED:
        return
    applied = usage.add('used', row.delta)
    if applied != row.delta:
        usage_rows.record_drift(
            conn, project_id, row.resource, row.consumer_id,
            'used_below_zero', row.delta, applied,
            'commit of reservation %s' % row.uuid)
