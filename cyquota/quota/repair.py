"""Repair: find drift between counts and records (check), and repair it
(sync, optionally adopting what the agents report, or what the cloud's
Placement says each consumer holds).

The counts are ``quota_usages.used`` and ``.reserved``. The records say
what they should be: ``used`` is what the consumers hold
(``consumer_usages``: committed reservations minus releases) and
``reserved`` is the sum of the positive deltas of reservations still
``reserved``. Drift events that the ledger recorded (a release of more than
was used, for example) are reported too until a sync acknowledges them.

When agents report what is really attached (``report_allocations``, kept by
``attachments``), what each consumer holds is compared with those reports
as well; ``sync(..., from_reports=True)`` adopts the reports. In a cloud,
``sync(..., placement=...)`` adopts what Placement's consumers hold (read
by ``cyquota.cloud.witness``, which compares ``usage_counts`` with
Placement's); each change it makes is also recorded as a drift event of
kind ``placement_adopted``, acknowledged at once, and logged. Consumers
with a reservation still pending (an attach in progress) and active
leases (consumers of their own) are left alone.

The enforcement model's own aggregate rows (under strict-two-level, each
root's tree usage) must also equal the sum of the counts they add up; the
model checks and repairs them (``find_drift``, ``sync``). Every repair
runs under the ledger's locks, through its upkeep (``ledger.upkeep``:
``sync_usage`` and ``adopt_consumer_usage``).
"""

import dataclasses

from oslo_log import log as logging
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.lease_tables import calendar
from cyquota.quota import attachments

_usages = models.QuotaUsage.__table__
_reservations = models.Reservation.__table__
_consumers = models.ConsumerUsage.__table__
_drift = models.DriftEvent.__table__
_leases = lease_models.Lease.__table__

LOG = logging.getLogger(__name__)

#: The kind of the drift events that record a sync from Placement.
PLACEMENT_ADOPTED = 'placement_adopted'


@dataclasses.dataclass(frozen=True)
class Drift:
    """A count that disagrees with the records."""

    project_id: str
    resource: str
    field: str
    recorded: int
    expected: int


@dataclasses.dataclass(frozen=True)
class ReportDrift:
    """A consumer's holding that disagrees with the agents' reports."""

    project_id: str
    resource: str
    consumer_id: str
    recorded: int
    reported: int


def expected_counts(context, project_id, resources):
    """``{resource: {"used": n, "reserved": n}}`` as the records say."""
    result = {r: {'used': 0, 'reserved': 0} for r in resources}
    for (_, resource), counts in _expected_for(context, [project_id],
                                               resources).items():
        result[resource] = counts
    return result


def _expected_for(context, project_ids, resources=None):
    """``{(project_id, resource): {"used", "reserved"}}`` for projects."""
    used = (sa.select(_consumers.c.project_id, _consumers.c.resource,
                      sa.func.sum(_consumers.c.used))
            .where(_consumers.c.project_id.in_(project_ids))
            .group_by(_consumers.c.project_id, _consumers.c.resource))
    reserved = (sa.select(_reservations.c.project_id,
                          _reservations.c.resource,
                          sa.func.sum(_reservations.c.delta))
                .where(_reservations.c.project_id.in_(project_ids),
                       _reservations.c.status == models.RESERVED,
                       _reservations.c.delta > 0)
                .group_by(_reservations.c.project_id,
                          _reservations.c.resource))
    if resources is not None:
        used = used.where(_consumers.c.resource.in_(resources))
        reserved = reserved.where(_reservations.c.resource.in_(resources))
    result: dict[tuple[str, str], dict[str, int]] = {}
    with db_api.reader(context) as session:
        for field, query in (('used', used), ('reserved', reserved)):
            for project_id, resource, total in session.execute(query):
                counts = result.setdefault((project_id, resource),
                                           {'used': 0, 'reserved': 0})
                counts[field] = int(total or 0)
    return result


def count_usage_rows(context, project_id=None):
    query = sa.select(sa.func.count()).select_from(_usages)
    if project_id is not None:
        query = query.where(_usages.c.project_id == project_id)
    with db_api.reader(context) as session:
        return session.execute(query).scalar()


def find_drift(context, project_id=None, progress=None):
    """Every count that disagrees with its records, in (project, resource)
    order. Reads a batch of usage rows at a time; ``progress(done)`` is
    called after each batch."""
    drift: list[Drift] = []
    marker = None
    done = 0
    while True:
        query = (sa.select(_usages.c.project_id, _usages.c.resource,
                           _usages.c.used, _usages.c.reserved)
                 .order_by(_usages.c.project_id, _usages.c.resource)
                 .limit(CONF.quota.batch_size))
        if project_id is not None:
            query = query.where(_usages.c.project_id == project_id)
        if marker is not None:
            query = query.where(sa.tuple_(_usages.c.project_id,
                                          _usages.c.resource) > marker)
        with db_api.reader(context) as session:
            rows = session.execute(query).all()
        if not rows:
            return drift
        expected = _expected_for(context, {r.project_id for r in rows})
        for row in rows:
            counts = expected.get((row.project_id, row.resource),
                                  {'used': 0, 'reserved': 0})
            for field in ('used', 'reserved'):
                recorded = getattr(row, field)
                if recorded != counts[field]:
                    drift.append(Drift(row.project_id, row.resource, field,
                                       recorded, counts[field]))
        done += len(rows)
        marker = (rows[-1].project_id, rows[-1].resource)
        if progress is not None:
            progress(done)


def _consumer_books(context, project_id=None):
    """``({(project_id, resource, consumer_id): used}, attaching)``: what
    each consumer holds (``''`` for nobody in particular), but active
    leases, which hold their quota as consumers of their own; and the
    ``(project_id, consumer_id)`` pairs with a reservation still pending."""
    leases = calendar.active_leases()
    held = (sa.select(_consumers.c.project_id, _consumers.c.resource,
                      _consumers.c.consumer_id, _consumers.c.used)
            .where(_consumers.c.used > 0,
                   _consumers.c.consumer_id.not_in(leases)))
    pending = (sa.select(_reservations.c.project_id,
                         sa.func.coalesce(_reservations.c.consumer_id, ''))
               .distinct()
               .where(_reservations.c.status == models.RESERVED))
    if project_id is not None:
        held = held.where(_consumers.c.project_id == project_id)
        pending = pending.where(_reservations.c.project_id == project_id)
    with db_api.reader(context) as session:
        recorded = {(project, resource, consumer): used
                    for project, resource, consumer, used
                    in session.execute(held)}
        attaching = set(map(tuple, session.execute(pending)))
    return recorded, attaching


#: A consumer's holding: ``(project_id, resource, consumer_id)``.
_Holding = tuple[str, str, str]


def _differing(recorded: dict[_Holding, int], wanted: dict[_Holding, int],
               attaching: set[tuple[str, str]]) -> list[_Holding]:
    """The ``(project_id, resource, consumer_id)`` keys whose holding in
    ``recorded`` is not the one in ``wanted``, in order, leaving out the
    consumers still attaching."""
    return [key for key in sorted(set(recorded) | set(wanted))
            if (key[0], key[2]) not in attaching
            and recorded.get(key, 0) != wanted.get(key, 0)]


def find_report_drift(context, project_id=None):
    """Every consumer whose holding in the ledger differs from the latest
    agent reports, in (project, resource, consumer) order; nothing before
    the first report."""
    if not attachments.host_reports(context):
        return []
    reported = attachments.reported_consumer_usage(context, project_id)
    recorded, attaching = _consumer_books(context, project_id)
    # Agents report attachments to instances; nobody in particular is
    # not theirs to count.
    recorded = {key: used for key, used in recorded.items() if key[2]}
    return [ReportDrift(*key, recorded.get(key, 0), reported.get(key, 0))
            for key in _differing(recorded, reported, attaching)]


def placement_adoption(context, placement, project_id=None):
    """``{project_id: {(resource, consumer_id): amount}}``: the holdings
    to adopt so that the ledger's consumers hold what Placement's do.

    :param placement: ``{project_id: {(resource, consumer_id): amount}}``
        of Placement's consumers (leases' excluded), of ``project_id``
        only when given. A ledger consumer Placement does not show, and
        nobody in particular (Placement knows no such consumer), come to
        hold nothing.
    """
    recorded, attaching = _consumer_books(context, project_id)
    wanted = {(project, resource, consumer): amount
              for project, held in placement.items()
              for (resource, consumer), amount in held.items()
              if project_id in (None, project)}
    adopt: dict[str, dict[tuple[str, str], int]] = {}
    for key in _differing(recorded, wanted, attaching):
        adopt.setdefault(key[0], {})[key[1:]] = wanted.get(key, 0)
    return adopt


def usage_counts(context, project_id=None):
    """``{(project_id, resource): {"used": n, "leased": n}}`` of the usage
    rows that count something (only ``project_id``'s when given)."""
    query = (sa.select(_usages.c.project_id, _usages.c.resource,
                       _usages.c.used, _usages.c.leased)
             .where(sa.or_(_usages.c.used > 0, _usages.c.leased > 0)))
    if project_id is not None:
        query = query.where(_usages.c.project_id == project_id)
    with db_api.reader(context) as session:
        return {(row.project_id, row.resource): {'used': row.used,
                                                 'leased': row.leased}
                for row in session.execute(query)}


def consumer_projects(context, consumer_ids):
    """``{consumer_id: project_id}`` of the consumers the ledger knows."""
    consumer_ids = sorted(consumer_ids)
    found = {}
    with db_api.reader(context) as session:
        for start in range(0, len(consumer_ids), CONF.quota.batch_size):
            batch = consumer_ids[start:start + CONF.quota.batch_size]
            found.update(session.execute(
                sa.select(_consumers.c.consumer_id, _consumers.c.project_id)
                .where(_consumers.c.consumer_id.in_(batch))).all())
    return found


def find_tree_drift(context, model, root_id=None):
    """The aggregate rows of the enforcement ``model`` that disagree with
    the counts they sum (under strict-two-level, ``tree_usage.TreeDrift``;
    none under flat)."""
    return model.find_drift(context, root_id)


@dataclasses.dataclass(frozen=True)
class Findings:
    """What ``check`` found: drifting counts, unacknowledged drift events,
    consumers that disagree with the agents' reports, drifting aggregate
    rows of the model, and copies of a lease's status or window that
    disagree with its own (``calendar.Disagreement``)."""

    counts: list
    events: list
    reports: list
    trees: list
    leases: list

    def __bool__(self):
        return bool(self.counts or self.events or self.reports
                    or self.trees or self.leases)


def check(context, model, project_id=None, progress=None):
    """Every kind of drift, as ``Findings`` (only ``project_id``'s when
    given; ``progress`` as for ``find_drift``) under the enforcement
    ``model``."""
    return Findings(find_drift(context, project_id, progress),
                    unresolved_events(context, project_id),
                    find_report_drift(context, project_id),
                    find_tree_drift(context, model, project_id),
                    lease_disagreements(context, project_id))


def lease_disagreements(context, project_id=None):
    """The copies of a lease's status or window (its reservations', its
    devices') that are not the lease's own (``calendar.disagreements``)."""
    with db_api.reader(context) as session:
        return calendar.disagreements(session.connection(), project_id)


def unresolved_events(context, project_id=None):
    """Drift events not yet acknowledged by a sync, oldest first."""
    query = (sa.select(_drift).where(_drift.c.resolved_at.is_(None))
             .order_by(_drift.c.id))
    if project_id is not None:
        query = query.where(_drift.c.project_id == project_id)
    with db_api.reader(context) as session:
        return [dict(row) for row in session.execute(query).mappings()]


def _adopt(context, upkeep, adopt):
    """Make each project's consumers hold ``adopt`` ({project_id:
    {(resource, consumer_id): amount}}); returns ``(consumer_id, change)``
    pairs."""
    adopted = []
    for project, holdings in sorted(adopt.items()):
        for resource, consumer, old, new in upkeep.adopt_consumer_usage(
                context, project, holdings):
            adopted.append((consumer, dict(
                project_id=project, resource=resource,
                field='consumer %s' % (consumer or '(none)'), old=old,
                new=new)))
    return adopted


def _record(session, made, why):
    """Keep the changes ``made`` (``(consumer_id, change)`` pairs) as
    drift events acknowledged at once, and log them: what changed and
    ``why``."""
    now = models.utcnow()
    for consumer, change in made:
        LOG.info('Quota repaired %s: project %s, %s, %s: %d -> %d', why,
                 change['project_id'], change['resource'], change['field'],
                 change['old'], change['new'])
        session.execute(_drift.insert().values(
            project_id=change['project_id'], resource=change['resource'],
            consumer_id=consumer, kind=PLACEMENT_ADOPTED,
            requested=change['new'] - change['old'],
            applied=change['new'] - change['old'],
            detail='%s %d -> %d, %s' % (change['field'], change['old'],
                                        change['new'], why),
            created_at=now, resolved_at=now))


def sync(context, upkeep, project_id=None, progress=None,
         from_reports=False, placement=None):
    """Repair every drifting count and acknowledge the drift events, through
    the ledger's ``upkeep`` (``ledger.upkeep.Upkeep``) and its model.

    Returns ``(changes, acknowledged)``: changes as dicts of project_id,
    resource, field (``used``, ``reserved``, ``consumer <id>`` for an
    adopted holding, ``tree used`` / ``tree reserved`` for a root's tree
    usage), old and new; acknowledged, the number of events.
    Each project is repaired in its own locked transaction, where its
    records are read again, so a concurrent reserve or commit is never
    overwritten with a stale figure. ``from_reports``: first make each
    consumer's holding what the agents report. ``placement``: first make
    it what Placement's consumers hold (see ``placement_adoption``), and
    record every change as a ``placement_adopted`` drift event.
    """
    adopt: dict[str, dict[tuple[str, str], int]] = {}
    if from_reports:
        for item in find_report_drift(context, project_id):
            adopt.setdefault(item.project_id, {})[
                (item.resource, item.consumer_id)] = item.reported
    elif placement is not None:
        adopt = placement_adoption(context, placement, project_id)
    made = _adopt(context, upkeep, adopt)
    by_project: dict[str, set[str]] = {}
    for item in find_drift(context, project_id=project_id,
                           progress=progress):
        by_project.setdefault(item.project_id, set()).add(item.resource)
    for project, resources in sorted(by_project.items()):
        for resource, field, old, new in upkeep.sync_usage(
                context, project, sorted(resources), expected_counts):
            made.append((None, dict(project_id=project, resource=resource,
                                    field=field, old=old, new=new)))
    # After the members' counts, so the trees add up the repaired ones.
    for item in upkeep.model.sync(context, project_id):
        made.append((None, dict(
            project_id=item.root_id, resource=item.resource,
            field='tree %s' % item.field, old=item.recorded,
            new=item.expected)))
    with db_api.writer(context) as session:
        query = _drift.update().where(_drift.c.resolved_at.is_(None))
        if project_id is not None:
            query = query.where(_drift.c.project_id == project_id)
        acknowledged = session.execute(
            query.values(resolved_at=models.utcnow())).rowcount
        if placement is not None:
            _record(session, made, 'from Placement')
    return [change for _, change in made], acknowledged
