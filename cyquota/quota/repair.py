"""Repair: find drift between counts and records (check), and repair it
(sync, optionally adopting what the agents report).

The counts are ``quota_usages.used`` and ``.reserved``. The records say
what they should be: ``used`` is what the consumers hold
(``consumer_usages``: committed reservations minus releases) and
``reserved`` is the sum of the positive deltas of reservations still
``reserved``. Drift events that the ledger recorded (a release of more than
was used, for example) are reported too until a sync acknowledges them.

When agents report what is really attached (``report_allocations``, kept by
``attachments``), what each consumer holds is compared with those reports
as well; ``sync(..., from_reports=True)`` adopts the reports. Consumers
with a reservation still pending (an attach in progress) are left alone.

The enforcement model's own aggregate rows (under strict-two-level, each
root's tree usage) must also equal the sum of the counts they add up; the
model checks and repairs them (``find_drift``, ``sync``). Every repair
runs under the ledger's locks, through its public pieces
(``DbQuotaDriver.sync_usage`` and ``adopt_consumer_usage``).
"""

import dataclasses

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.quota import attachments

_usages = models.QuotaUsage.__table__
_reservations = models.Reservation.__table__
_consumers = models.ConsumerUsage.__table__
_drift = models.DriftEvent.__table__
_leases = lease_models.Lease.__table__


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
    result = {}
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
    drift = []
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


def find_report_drift(context, project_id=None):
    """Every consumer whose holding in the ledger differs from the latest
    agent reports, in (project, resource, consumer) order; nothing before
    the first report."""
    if not attachments.host_reports(context):
        return []
    reported = attachments.reported_consumer_usage(context, project_id)
    # An active lease holds its quota as a consumer of its own, which no
    # agent reports: agents attach the lease's devices to instances.
    leases = sa.select(_leases.c.id).where(
        _leases.c.status == lease_models.ACTIVE)
    held = (sa.select(_consumers.c.project_id, _consumers.c.resource,
                      _consumers.c.consumer_id, _consumers.c.used)
            .where(_consumers.c.consumer_id != '', _consumers.c.used > 0,
                   _consumers.c.consumer_id.not_in(leases)))
    pending = (sa.select(_reservations.c.project_id,
                         _reservations.c.consumer_id).distinct()
               .where(_reservations.c.status == models.RESERVED,
                      _reservations.c.consumer_id.is_not(None)))
    if project_id is not None:
        held = held.where(_consumers.c.project_id == project_id)
        pending = pending.where(_reservations.c.project_id == project_id)
    with db_api.reader(context) as session:
        recorded = {tuple(row[:3]): row[3] for row in session.execute(held)}
        attaching = set(map(tuple, session.execute(pending)))
    return [ReportDrift(*key, recorded.get(key, 0), reported.get(key, 0))
            for key in sorted(set(recorded) | set(reported))
            if (key[0], key[2]) not in attaching
            and recorded.get(key, 0) != reported.get(key, 0)]


def find_tree_drift(context, driver, root_id=None):
    """The model's aggregate rows that disagree with the counts they sum
    (under strict-two-level, ``tree_usage.TreeDrift``; none under flat)."""
    return driver.model.find_drift(context, root_id)


@dataclasses.dataclass(frozen=True)
class Findings:
    """What ``check`` found: drifting counts, unacknowledged drift events,
    consumers that disagree with the agents' reports, and drifting
    aggregate rows of the model."""

    counts: list
    events: list
    reports: list
    trees: list

    def __bool__(self):
        return bool(self.counts or self.events or self.reports
                    or self.trees)


def check(context, driver, project_id=None, progress=None):
    """Every kind of drift, as ``Findings`` (only ``project_id``'s when
    given; ``progress`` as for ``find_drift``)."""
    return Findings(find_drift(context, project_id, progress),
                    unresolved_events(context, project_id),
                    find_report_drift(context, project_id),
                    find_tree_drift(context, driver, project_id))


def unresolved_events(context, project_id=None):
    """Drift events not yet acknowledged by a sync, oldest first."""
    query = (sa.select(_drift).where(_drift.c.resolved_at.is_(None))
             .order_by(_drift.c.id))
    if project_id is not None:
        query = query.where(_drift.c.project_id == project_id)
    with db_api.reader(context) as session:
        return [dict(row) for row in session.execute(query).mappings()]


def sync(context, driver, project_id=None, progress=None,
         from_reports=False):
    """Repair every drifting count and acknowledge the drift events.

    Returns ``(changes, acknowledged)``: changes as dicts of project_id,
    resource, field (``used``, ``reserved``, ``consumer <id>`` for an
    adopted report, ``tree used`` / ``tree reserved`` for a root's tree
    usage), old and new; acknowledged, the number of events.
    Each project is repaired in its own locked transaction, where its
    records are read again, so a concurrent reserve or commit is never
    overwritten with a stale figure. ``from_reports``: first make each
    consumer's holding what the agents report.
    """
    changes = []
    if from_reports:
        adopt = {}
        for item in find_report_drift(context, project_id):
            adopt.setdefault(item.project_id, {})[
                (item.resource, item.consumer_id)] = item.reported
        for project, holdings in sorted(adopt.items()):
            for resource, consumer, old, new in driver.adopt_consumer_usage(
                    context, project, holdings):
                changes.append(dict(project_id=project, resource=resource,
                                    field='consumer %s' % consumer, old=old,
                                    new=new))
    by_project = {}
    for item in find_drift(context, project_id=project_id,
                           progress=progress):
        by_project.setdefault(item.project_id, set()).add(item.resource)
    for project, resources in sorted(by_project.items()):
        for resource, field, old, new in driver.sync_usage(
                context, project, sorted(resources), expected_counts):
            changes.append(dict(project_id=project, resource=resource,
                                field=field, old=old, new=new))
    # After the members' counts, so the trees add up the repaired ones.
    for item in driver.model.sync(context, project_id):
        changes.append(dict(project_id=item.root_id, resource=item.resource,
                            field='tree %s' % item.field,
                            old=item.recorded, new=item.expected))
    with db_api.writer(context) as session:
        query = _drift.update().where(_drift.c.resolved_at.is_(None))
        if project_id is not None:
            query = query.where(_drift.c.project_id == project_id)
        acknowledged = session.execute(
            query.values(resolved_at=models.utcnow())).rowcount
    return changes, acknowledged
