"""Settle reservations: commit, roll back, expire.

A reservation's status changes only from ``reserved``, and only while its
row is locked, so each reservation ends exactly once. Ending locks the
reservation rows first (the ledger's lock order), then applies the end to
the counts: for each resource with one relative UPDATE that takes
nothing below zero (all resources in one statement where the driver
counts the rows of a batch: SQLite); otherwise (drift, a model whose rule
spans more than the project's rows) with the rows locked and read. On
PostgreSQL and MariaDB the common commit or rollback, counts and
consumers too, of one resource or several, is one statement, a
transaction of its own (``one_statement``), when the reservations are all
still reserved (for a rollback, none holding devices; on MariaDB, each
of a resource of its own, or all of one resource and, for a commit, one
consumer).

A reservation is expired from its ``expire`` time on, whether or not the
periodic sweep has run: a commit of one that is due ends it as expired
(its quota given back) and is refused as a conflict.
"""

import datetime

from oslo_log import log as logging
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota.quota.ledger import consumers
from cyquota.quota.ledger import one_statement
from cyquota.quota.ledger.one_statement import binds
from cyquota.quota.ledger import statements as sql
from cyquota.quota.ledger import usage as usage_rows

LOG = logging.getLogger(__name__)

# A rollback ends a reservation whenever it is due.
_EVER = datetime.datetime(1970, 1, 1)


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
                    due = session.execute(sql.DUE_RESERVATIONS, dict(
                        _project_id=project_id, _now=now,
                        _batch=CONF.quota.batch_size)).scalars().all()
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
        now = models.utcnow()
        params = dict(_project_id=project_id, _status=target, _now=now,
                      _due_before=now if target == models.COMMITTED
                      else _EVER)
        # In one order, whatever the caller's: two ends of the same
        # reservations lock them alike.
        params.update((binds.bind_name('_uuid', index), uuid)
                      for index, uuid in enumerate(sorted(uuids)))
        return one_statement.run_alone(self._one_statements[key], params)

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
        params = dict(_project_id=project_id, _uuids=list(uuids))
        now = models.utcnow()
        due_before = now if target == models.COMMITTED else _EVER
        if conn.dialect.update_returning:
            pending = conn.execute(sql.END_RESERVATIONS_RETURNING, dict(
                params, _status=target, _now=now,
                _due_before=due_before)).all()
            pending.sort(key=lambda row: row.id)
            ended = {row.uuid for row in pending}
            others = []
            if len(ended) < len(uuids):
                others = conn.execute(sql.FIND_RESERVATIONS, dict(
                    params, _uuids=[u for u in uuids
                                    if u not in ended])).all()
        else:
            rows = [row for row in conn.execute(sql.LOCK_RESERVATIONS,
                                                params)
                    if row.project_id == project_id]
            pending = [row for row in rows if row.status == models.RESERVED
                       and row.expire >= due_before]
            others = [row for row in rows if row not in pending]
            if pending:
                conn.execute(sql.SET_STATUS, dict(
                    _ids=[row.id for row in pending], _status=target,
                    _now=now))
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
            by_resource = {}
            for row in rows:
                by_resource.setdefault(row.resource, []).append(row)
            now = models.utcnow()
            commit = target == models.COMMITTED
            moves = []
            for resource, group in sorted(by_resource.items()):
                held = sum(row.delta for row in group if row.delta > 0)
                taken = sum(row.delta for row in group if row.delta < 0)
                moves.append(dict(
                    _project_id=project_id, _resource=resource, _held=held,
                    _taken=taken if commit else 0,
                    _used=held + taken if commit else 0, _now=now))
            if (together and len(moves) > 1
                    and conn.dialect.supports_sane_multi_rowcount):
                # Each UPDATE changes at most its one usage row.
                if conn.execute(sql.END_RESERVED, moves
                                ).rowcount != len(moves):
                    raise _Drift()
            else:
                for move in moves:
                    if conn.execute(sql.END_RESERVED, move).rowcount != 1:
                        # A count would go below zero: drift, told row by
                        # row.
                        self._apply_ends_locked(
                            context, conn, project_id,
                            by_resource[move['_resource']], target)
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
            rows = conn.execute(sql.LOCK_RESERVED_BY_ID,
                                dict(_ids=ids)).all()
            if rows:
                conn.execute(sql.SET_STATUS, dict(
                    _ids=[row.id for row in rows], _status=models.EXPIRED,
                    _now=now))
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
        given = -usage.add('reserved', -row.delta)
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
