"""The state of the Placement mirror, one database row that every process
shares: which conductor runs the current round of the periodic sync, when
the copy last succeeded (its age), and why the last attempt failed; and
the generation of each provider Placement listed at the last sync, which
the next one compares (``cyquota.cloud.mirror_read``). The periodic
witness (``cyquota.cloud.witness_rounds``) keeps its rounds the same way,
on a row of its own (``state_id``)."""

import datetime
import json

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import mirror_models
from cyquota.db import models

_state = mirror_models.MirrorState.__table__
_seen = mirror_models.SeenProvider.__table__
_ID = mirror_models.STATE_ID
#: The part of the interval a round may start early, so that the jitter
#: of the conductors' schedules does not skip a whole round.
SLACK = 0.1


def lock(session):
    """Lock the state row for the transaction (creating it on first use),
    so that two syncs never write the copy at once."""
    found = session.execute(sa.select(_state.c.id).where(
        _state.c.id == _ID).with_for_update()).first()
    if found is None:
        # A lost race to create it is a duplicate entry: the caller's
        # retry_on_conflict starts again and finds it.
        # The inserted row is the transaction's until it ends.
        session.execute(_state.insert().values(id=_ID))


def _ensure(context, state_id):
    try:
        with db_api.writer(context) as session:
            if session.execute(sa.select(_state.c.id).where(
                    _state.c.id == state_id)).first() is None:
                session.execute(_state.insert().values(id=state_id))
    except db_exc.DBDuplicateEntry:
        pass


def claim_round(context, host, interval, state_id=_ID):
    """Whether ``host`` runs this round of the periodic sync (or of the
    job of row ``state_id``): true for the first conductor to ask once
    ``interval`` seconds (less a little slack) have passed since the round
    before, false for every other."""
    _ensure(context, state_id)
    now = models.utcnow()
    since = now - datetime.timedelta(seconds=interval * (1 - SLACK))
    with db_api.writer(context) as session:
        taken = session.execute(_state.update().where(
            _state.c.id == state_id,
            sa.or_(_state.c.claimed_at.is_(None),
                   _state.c.claimed_at <= since)).values(
            claimed_at=now, claimed_by=host[:255])).rowcount
    return taken == 1


def synced(session, state_id=_ID):
    """Record, in the sync's transaction, that the copy is current (or
    that the job of row ``state_id`` has just run)."""
    session.execute(_state.update().where(_state.c.id == state_id).values(
        synced_at=models.utcnow(), last_error=None))


@db_api.retry_on_conflict
def failed(context, reason, state_id=_ID):
    """Record a failed sync (or run of the job of row ``state_id``) and
    its one-line ``reason``."""
    _ensure(context, state_id)
    with db_api.writer(context) as session:
        session.execute(_state.update().where(_state.c.id == state_id)
                        .values(failed_at=models.utcnow(),
                                last_error=reason[:1024]))


def _classes_text(classes):
    return json.dumps(classes, sort_keys=True)


def seen(session, classes):
    """``{uuid: (generation, allocated)}`` recorded by the last sync; empty
    when it read other mapped ``classes`` (``{placement class:
    resource}``), whose copy an incremental read cannot build on."""
    recorded = session.execute(sa.select(_state.c.seen_classes).where(
        _state.c.id == _ID)).scalar()
    if recorded != _classes_text(classes):
        return {}
    return {uuid: (generation, allocated) for uuid, generation, allocated
            in session.execute(sa.select(_seen))}


def record(session, generations, classes):
    """Record, in the sync's transaction (state row locked), the
    ``{uuid: (generation, allocated)}`` of every provider listed, read with
    the mapped ``classes``; writes only what differs."""
    text = _classes_text(classes)
    if session.execute(sa.select(_state.c.seen_classes).where(
            _state.c.id == _ID)).scalar() != text:
        session.execute(_state.update().where(_state.c.id == _ID).values(
            seen_classes=text))
    before = {uuid: (generation, allocated) for uuid, generation, allocated
              in session.execute(sa.select(_seen))}
    gone = sorted(set(before) - set(generations))
    if gone:
        session.execute(_seen.delete().where(_seen.c.uuid.in_(gone)))
    new = [{'uuid': uuid, 'generation': generation, 'allocated': allocated}
           for uuid, (generation, allocated) in sorted(generations.items())
           if uuid not in before]
    if new:
        session.execute(_seen.insert(), new)
    moved = [{'key': uuid, 'to_generation': generation,
              'to_allocated': allocated}
             for uuid, (generation, allocated) in sorted(generations.items())
             if uuid in before and before[uuid] != (generation, allocated)]
    if moved:
        session.execute(_seen.update().where(
            _seen.c.uuid == sa.bindparam('key')).values(
            generation=sa.bindparam('to_generation'),
            allocated=sa.bindparam('to_allocated')), moved)


def read(context, state_id=_ID):
    """``{synced_at, failed_at, last_error, age}`` (``age``: seconds
    since the last successful sync, or run of the job of row
    ``state_id``, None before the first)."""
    with db_api.reader(context) as session:
        row = session.execute(sa.select(_state).where(
            _state.c.id == state_id)).first()
    synced_at = row.synced_at if row else None
    return {
        'synced_at': synced_at,
        'failed_at': row.failed_at if row else None,
        'last_error': row.last_error if row else None,
        'age': ((models.utcnow() - synced_at).total_seconds()
                if synced_at else None),
    }
