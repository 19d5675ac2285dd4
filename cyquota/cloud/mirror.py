"""The mirror of the cloud's Placement in cyquota's device tables
(``[placement] source = placement``).

One :func:`sync` reads Placement (``mirror_read``), compares it with
cyquota's copy (``mirror_diff``) and writes the difference in one
transaction (``mirror_store``), under the lock of the mirror's state row
(``mirror_state``) so that two syncs never write at once. A sync that finds
nothing new writes nothing but the time of the sync.

The read is incremental: the sync's transaction records the generation of
every provider Placement listed, and the next sync reads only what moved
since (``mirror_read``). Should another sync record in between, so that
what was read no longer completes the copy, the sync starts again; its
last attempt, like ``full=True``, reads everything.

Placement is the truth, with two guards: a provider gone from Placement
that a live lease or reservation holds is kept, marked, logged and counted
(``cyquota_placement_mirror_kept_providers``); an inventory that shrinks
below what is held on it is applied, logged and counted
(``cyquota_placement_mirror_overcommitted``). When Placement does not
answer, the copy stays as it was: :func:`periodic_sync` logs one WARNING
line and records the failure, and the copy's age shows in ``GET /metrics``
and ``GET /healthcheck``.
"""

import dataclasses

from oslo_log import log as logging

from cyquota.cloud import mirror_diff
from cyquota.cloud import mirror_read
from cyquota.cloud import mirror_state
from cyquota.cloud import mirror_store
from cyquota.cloud import placement_client
from cyquota.cloud import placement_errors
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota import metrics

LOG = logging.getLogger(__name__)

#: Attempts of one sync overtaken by others; the last reads everything.
ATTEMPTS = 3

_KEPT_LABELS = {mirror_store.HELD: 'held',
                mirror_store.HAS_KEPT_CHILD: 'parent'}


@dataclasses.dataclass
class Result:
    """What one sync changed.

    :ivar changes: the ``mirror_diff.Changes`` written.
    :ivar kept: uuids gone from Placement and kept (held).
    :ivar newly_kept: ``{uuid: reason}`` of those kept for the first time.
    :ivar overcommitted: ``[(uuid, resource, held, capacity)]``.
    """

    changes: mirror_diff.Changes
    kept: frozenset = frozenset()
    newly_kept: dict = dataclasses.field(default_factory=dict)
    overcommitted: list = dataclasses.field(default_factory=list)

    def rows(self):
        """``[(change, count)]``, one row per kind of change."""
        return mirror_diff.summary_rows(self.changes, self.kept)


def _baseline(session, mapped, full, current=None):
    """``(recorded generations, copy)`` that an incremental read builds
    on: the copy (``current``, read when None) less the providers kept,
    which are not Placement's as they are; ``({}, {})`` for a full read."""
    seen = {} if full else mirror_state.seen(session, mapped)
    if not seen:
        return {}, {}
    kept = mirror_store.kept(session)
    current = mirror_store.current(session) if current is None else current
    return seen, {uuid: provider for uuid, provider in current.items()
                  if uuid not in kept}


def _read(context, client, mapped, full):
    with db_api.reader(context) as session:
        seen, copy = _baseline(session, mapped, full)
    reading = mirror_read.read(client, mapped, seen, copy)
    LOG.debug('Placement mirror: %d of %d providers changed in Placement, '
              '%d requests', len(reading.inventories), len(reading.listed),
              reading.requests())
    return reading


@db_api.retry_on_conflict
def _write(context, reading, mapped, full):
    with db_api.writer(context) as session:
        mirror_state.lock(session)
        current = mirror_store.current(session)
        seen, copy = _baseline(session, mapped, full, current)
        found, generations = mirror_read.providers(reading, seen, copy)
        wanted = mirror_diff.without_consumers(
            found, mirror_store.own_consumers(session))
        changes = mirror_diff.diff(wanted, current)
        result = Result(changes)
        if changes:
            newly_kept, gone, shrunk = mirror_store.apply(session, wanted,
                                                          changes)
            result = Result(changes, frozenset(set(changes.removed) - gone),
                            newly_kept, shrunk)
        mirror_state.record(session, generations, mapped)
        mirror_state.synced(session)
        return result


def _report(result):
    for uuid, reason in sorted(result.newly_kept.items()):
        LOG.warning('Placement mirror: provider %s is gone from Placement '
                    'but kept: %s', uuid, reason)
        metrics.MIRROR_KEPT.labels(_KEPT_LABELS[reason]).inc()
    for uuid, resource, held, room in result.overcommitted:
        LOG.warning('Placement mirror: provider %s now offers %d %s, less '
                    'than the %d held on it; nothing new lands there until '
                    'holdings end', uuid, room, resource, held)
        metrics.MIRROR_OVERCOMMITTED.labels(resource).inc()
    metrics.MIRROR_SYNCS.labels(
        'changed' if result.changes else 'unchanged').inc()
    if result.changes:
        LOG.info('Placement mirror synced: %s', ', '.join(
            '%s %d' % (name, count) for name, count in result.rows()
            if count))


def sync(context, client=None, conf=None, full=False):
    """Bring cyquota's copy of Placement's providers up to date.

    :param client: a ``PlacementClient`` (one from ``conf`` when None).
    :param conf: the configuration (cyquota's ``CONF`` when None).
    :param full: read every provider whatever its generation (changes
        made in Placement without moving generations, as aggregates set at
        microversions before 1.19).
    :returns: a :class:`Result`.
    :raises cyquota.cloud.placement_errors.PlacementError: Placement did
        not answer as it should; the copy is left as it was.
    """
    conf = CONF if conf is None else conf
    client = client or placement_client.PlacementClient(conf)
    mapped = mirror_read.mapped_classes(conf)
    for attempt in range(1, ATTEMPTS + 1):
        everything = full or attempt == ATTEMPTS
        try:
            reading = _read(context, client, mapped, everything)
        except placement_errors.PlacementError:
            metrics.MIRROR_SYNCS.labels('failed').inc()
            raise
        try:
            result = _write(context, reading, mapped, everything)
        except mirror_read.Overtaken:
            LOG.info('Placement mirror: another sync recorded meanwhile; '
                     'reading again')
            continue
        _report(result)
        return result


def periodic_sync(context, host, client=None):
    """The conductor's periodic sync: run :func:`sync` unless another
    conductor runs this round; a Placement that does not answer is one
    WARNING line with the copy's age, and the copy stays.

    :returns: the :class:`Result`, or None when nothing was synced.
    """
    if not mirror_state.claim_round(context, host,
                                    CONF.placement.sync_interval):
        return None
    try:
        return sync(context, client=client)
    except placement_errors.PlacementError as error:
        mirror_state.failed(context, str(error))
        age = mirror_state.read(context)['age']
        LOG.warning('Placement mirror not updated, serving the last copy '
                    '(%s): %s', 'synced %d s ago' % age if age is not None
                    else 'never synced', error)
        return None
