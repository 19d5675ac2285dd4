"""PostgreSQL's one statements: data-modifying CTEs that chain the
conditional UPDATEs and INSERTs of ``statements``, one SELECT each, its
verdict a number (``_verdict``)."""

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from cyquota.db import engine_tuning
from cyquota.db import models
from cyquota.quota.ledger.one_statement import binds
from cyquota.quota.ledger import statements as sql


def _verdict(done, untouched):
    """What a PostgreSQL one statement returns: 1 where it did everything
    (``done``), 0 where it wrote nothing (``untouched``); otherwise the
    error that rolls back what it wrote, ``engine_tuning.REFUSAL``. (The server
    logs that error: only drift, a batch found part-way done and a lost
    race come to it; the common refusals write nothing.)"""
    return sa.case((done, 1), (untouched, 0),
                   else_=sa.func.cyquota_refuse(engine_tuning.REFUSAL))


def reserve_ctes(limit, count, request_id):
    """A reserve of ``count`` resources as one SELECT of its CTEs: for
    each resource in turn, the conditional UPDATE of ``reserve_if_fits``
    and the INSERT of its reservation (each UPDATE needs the previous
    INSERT's row, which also keeps the usage rows locked in the caller's
    order). Its verdict (``_verdict``) is done if every resource fit
    and, with ``request_id``, no reserve used it before; untouched if the
    first did not. The first UPDATE also needs every other resource to
    fit as the statement's snapshot saw it, so that a refusal writes
    nothing (and raises no error) unless another transaction changed a
    later row meanwhile."""
    held = first = None
    others_fit = [
        # Not correlated with the UPDATE's row: any row of the table.
        binds.per_resource(
            sa.exists().where(*sql.THE_USAGE, sql.fits(limit))
            .correlate(None), index)
        for index in range(1, count)]
    for index in range(count):
        counted = sql.reserve_if_fits(limit)
        if index == 0:
            counted = counted.where(*others_fit)
        if request_id:
            counted = counted.where(_request_unseen())
        if held is not None:
            counted = counted.where(sa.exists(sa.select(held.c.uuid)))
        counted = binds.per_resource(
            counted.returning(sql.USAGES.c.id, sql.USAGES.c.project_id,
                              sql.USAGES.c.resource), index
        ).cte('counted_%d' % index)
        first = first if first is not None else counted
        held = binds.per_resource(
            sql.reservation_of_usage(counted)
            .returning(sql.RESERVATIONS.c.uuid), index
        ).cte('held_%d' % index)
    return sa.select(_verdict(
        sa.exists(sa.select(held.c.uuid)),
        ~sa.exists(sa.select(first.c.id))))


def _request_unseen():
    """Whether no reservation of the project has the request id: one
    lookup in the unique index of (project, request id, resource), whatever
    the statistics say. Asked in that index's order (resource) as a scalar
    subquery (an EXISTS would drop the order), so the plan kept for any
    parameters does not take the (project, status) index instead and read
    every reservation the project has."""
    return (sql.REQUEST_SEEN.order_by(sql.RESERVATIONS.c.resource)
            .scalar_subquery().is_(None))


def end_ctes(target, count):
    """PostgreSQL's end (``target``: committed or rolled back) of ``count``
    reservations as one SELECT of its CTEs: ``end_reservations`` of the
    uuids ``_uuid_<i>`` (for a rollback, of those holding no devices,
    which the step-by-step end gives back), then per resource the counts
    as ``END_RESERVED`` moves them and, for a commit, what each consumer
    holds as ``consumers.add`` changes it. Its verdict (``_verdict``) is
    done if it ended every reservation and moved every count, untouched
    if it ended none.

    One text per count: a plan made once for an array of uuids of unknown
    length may scan the table rather than look each uuid up. The end of
    one reservation, an attach's commit, is ``end_one_ctes``."""
    if count == 1:
        return end_one_ctes(target)
    commit = target == models.COMMITTED
    ended = _ended(target, sql.RESERVATIONS.c.uuid.in_([
        sa.bindparam(binds.bind_name('_uuid', index), type_=sa.String)
        for index in range(count)]))
    taken = _negative(ended.c.delta)
    groups = (
        sa.select(ended.c.resource,
                  _sum(_positive(ended.c.delta)).label('held'),
                  _sum(taken).label('taken'),
                  _sum(ended.c.delta).label('total'))
        .group_by(ended.c.resource).cte('groups'))
    counted = _counted(commit, sa.bindparam('_project_id'),
                       groups.c.resource, groups.c.held, groups.c.taken,
                       groups.c.total)
    # Every resource's counts moved and, for a commit, every consumer's.
    moved = [~sa.exists(sa.select(groups.c.resource).where(
        groups.c.resource.not_in(sa.select(counted.c.resource))))]
    if commit:
        holders, changed = _add_to_consumers(ended, taken, counted)
        moved.append(sa.select(sa.func.count()).select_from(changed)
                     .scalar_subquery()
                     == sa.select(sa.func.count()).select_from(holders)
                     .scalar_subquery())
    ended_count = sa.select(sa.func.count()).select_from(ended)
    return sa.select(_verdict(
        sa.and_(ended_count.scalar_subquery() == count, *moved),
        ~sa.exists(sa.select(ended.c.id))))


def end_one_ctes(target):
    """``end_ctes`` of one reservation (``_uuid_0``), with nothing to
    group: its row alone moves the counts and what its consumer holds.

    Why a statement of its own: a statement that waited for a row another
    transaction changed (the project's usage row, under concurrent
    commits) checks the row again with every part of itself set up anew
    (PostgreSQL's EvalPlanQual), while it holds that row's lock. Without
    the aggregates and counts that a batch needs, that costs less, and
    eight concurrent commits of one project go faster."""
    commit = target == models.COMMITTED
    ended = _ended(target, sql.RESERVATIONS.c.uuid == sa.bindparam(
        '_uuid_0', type_=sa.String), sql.RESERVATIONS.c.project_id)
    delta = ended.c.delta
    counted = _counted(commit, ended.c.project_id, ended.c.resource,
                       _positive(delta), _negative(delta), delta)
    done = sa.exists(sa.select(counted.c.resource))
    if commit:
        done = sa.and_(done, _add_to_consumer(ended, counted))
    return sa.select(_verdict(done, ~sa.exists(sa.select(ended.c.id))))


def _add_to_consumer(ended, counted):
    """Whether the one ended reservation's delta (``ended``) went onto
    what its consumer holds, if its counts moved (``counted``): an upsert
    where it is positive, a conditional UPDATE that takes nothing below
    zero otherwise. The consumer row is found by its whole key, the
    project from ``ended``'s row (see ``_add_to_consumers``)."""
    key = (ended.c.project_id, ended.c.resource,
           sa.func.coalesce(ended.c.consumer_id, ''))
    added = _added(
        sa.select(*key, ended.c.delta,
                  sa.bindparam('_now', type_=sa.DateTime))
        .join(counted, counted.c.resource == ended.c.resource)
        .where(ended.c.delta >= 0))
    taken_off = _taken_off(key, ended.c.delta, ended.c.delta,
                           counted.c.resource == ended.c.resource)
    return sa.or_(sa.exists(sa.select(added.c.resource)),
                  sa.exists(sa.select(taken_off.c.resource)))


def _ended(target, chosen, *returning):
    """The CTE ``end_reservations`` of the reservations ``chosen`` (for a
    rollback, of those holding no devices, which the step-by-step end
    gives back), returning ``returning`` besides its usual columns."""
    if target != models.COMMITTED:
        chosen = sa.and_(chosen, ~sql.RESERVATIONS.c.devices)
    return sql.end_reservations(chosen).returning(*returning).cte('ended')


def _counted(commit, project_id, resource, held, taken, total):
    """The CTE moving one resource's counts as ``END_RESERVED`` does:
    ``held`` off reserved and, for a ``commit``, ``total`` onto used, only
    where neither goes below zero (``taken``: the negative part)."""
    usages = sql.USAGES
    counts = dict(reserved=usages.c.reserved - held,
                  updated_at=sa.bindparam('_now'))
    where = [usages.c.project_id == project_id,
             usages.c.resource == resource, usages.c.reserved >= held]
    if commit:
        counts['used'] = usages.c.used + total
        where.append(usages.c.used + taken >= 0)
    return (usages.update().where(*where).values(**counts)
            .returning(usages.c.resource).cte('counted'))


def _positive(delta):
    return sa.case((delta > 0, delta), else_=0)


def _negative(delta):
    return sa.case((delta < 0, delta), else_=0)


def _sum(value):
    return sa.cast(sa.func.sum(value), sa.BigInteger)


def _add_to_consumers(ended, taken, counted):
    """The CTEs adding a commit's deltas to what consumers hold, of the
    resources whose counts moved (``counted``: under their usage rows'
    locks): an upsert where all are positive, a conditional UPDATE that
    takes nothing below zero otherwise. Returns the (resource, consumer)
    pairs to change and the rows changed."""
    consumer_id = sa.func.coalesce(ended.c.consumer_id, '')
    # The project rides along in ``holders`` so that the UPDATE below finds
    # consumer rows only through holders' keys: with the project as a
    # bind of its own, a plan kept for any parameters may read every
    # consumer row of the project and join them to holders.
    holders = (
        sa.select(sa.bindparam('_project_id', type_=sa.String)
                  .label('project_id'),
                  ended.c.resource, consumer_id.label('consumer_id'),
                  _sum(ended.c.delta).label('total'),
                  _sum(taken).label('taken'))
        .join(counted, counted.c.resource == ended.c.resource)
        .group_by(ended.c.resource, consumer_id).cte('holders'))
    added = _added(
        sa.select(holders.c.project_id, holders.c.resource,
                  holders.c.consumer_id,
                  holders.c.total, sa.bindparam('_now', type_=sa.DateTime))
        .where(holders.c.taken == 0))
    taken_off = _taken_off(
        (holders.c.project_id, holders.c.resource, holders.c.consumer_id),
        holders.c.taken, holders.c.total)
    return holders, sa.union_all(
        sa.select(added.c.resource), sa.select(taken_off.c.resource)
    ).subquery('changed')


def _added(moved):
    """The CTE adding what ``moved`` selects (project, resource, consumer,
    amount, time) to what consumers hold: an upsert."""
    consumers = sql.CONSUMERS
    upsert = postgresql.insert(consumers).from_select(
        ['project_id', 'resource', 'consumer_id', 'used', 'created_at'],
        moved)
    return upsert.on_conflict_do_update(
        index_elements=['project_id', 'resource', 'consumer_id'],
        set_=dict(used=consumers.c.used + upsert.excluded.used,
                  updated_at=upsert.excluded.created_at),
    ).returning(consumers.c.resource).cte('added')


def _taken_off(key, taken, total, *where):
    """The CTE adding ``total`` to what the consumer of ``key`` (project,
    resource and consumer: the whole key, so that a plan kept for any
    parameters looks each row up by it) holds, where ``taken`` (the
    negative part) is below zero and ``where`` holds, and takes nothing
    below zero."""
    consumers = sql.CONSUMERS
    return (
        consumers.update()
        .where(consumers.c.project_id == key[0],
               consumers.c.resource == key[1],
               consumers.c.consumer_id == key[2],
               taken < 0, consumers.c.used + taken >= 0, *where)
        .values(used=consumers.c.used + total,
                updated_at=sa.bindparam('_now'))
        .returning(consumers.c.resource)
        .cte('taken_off'))
