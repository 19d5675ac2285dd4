"""PostgreSQL's one statements: data-modifying CTEs that chain the
conditional UPDATEs and INSERTs of ``statements``, one SELECT each, its
verdict a number (``_verdict``)."""

import sqlalchemy as sa

from cyquota.db.backends import postgresql as backend
from cyquota.db import models
from cyquota.db import refusal
from cyquota.quota.ledger import binds
from cyquota.quota.ledger import consumers
from cyquota.quota.ledger import statements as sql


def _verdict(done, untouched):
    """What a PostgreSQL one statement returns: 1 where it did everything
    (``done``), 0 where it wrote nothing (``untouched``); otherwise the
    error that rolls back what it wrote, ``refusal.REFUSAL``. (The server
    logs that error: only drift, a batch found part-way done and a lost
    race come to it; the common refusals write nothing.)"""
    return sa.case((done, 1), (untouched, 0),
                   else_=sa.func.cyquota_refuse(refusal.REFUSAL))


def reserve_ctes(limit, count, request_id):
    """A reserve of ``count`` resources as one SELECT of its CTEs (for
    several, ``_reserve_many_ctes``): the conditional UPDATE of
    ``reserve_if_fits`` and the INSERT of its reservation. Its verdict
    (``_verdict``) is done if the resource fit and, with ``request_id``,
    no reserve used it before; untouched if not."""
    if count > 1:
        return _reserve_many_ctes(limit, count, request_id)
    counted = _counted_one(limit, request_id)
    held = binds.per_resource(
        sql.reservation_of_usage(counted)
        .returning(sql.RESERVATIONS.c.uuid), 0).cte('held_0')
    return sa.select(_verdict(sa.exists(sa.select(held.c.uuid)),
                              ~sa.exists(sa.select(counted.c.id))))


def _counted_one(limit, request_id):
    """The CTE of the conditional UPDATE of one resource's usage row
    (``reserve_if_fits``; with ``request_id``, only if no reserve used it
    before), returning the row."""
    counted = sql.reserve_if_fits(limit)
    if request_id:
        counted = counted.where(_request_unseen())
    return binds.per_resource(
        counted.returning(sql.USAGES.c.id, sql.USAGES.c.project_id,
                          sql.USAGES.c.resource), 0).cte('counted_0')


def claiming_reserve_ctes(limit, request_id, steps):
    """A reserve of one resource that claims a device
    (``steps``: ``placement.claim_steps``), as one SELECT of its CTEs:
    the conditional UPDATE of the usage row (``counted``: the row's lock
    first, as the locked path takes it); then, read from it, the
    generation of the provider ``chosen`` moved on where it is decisive
    and unchanged (``bumped``: its lock); then, read from that, the
    consumer, the allocation and the reservation. Its verdict is done if
    it wrote them all; untouched if the resource did not fit (nothing
    written); otherwise (no provider, not decisive, a generation that
    moved) it refuses, undoing the UPDATE."""
    counted = _counted_one(limit, request_id)
    chosen = steps.chosen(backend.POSTGRESQL).cte('chosen')
    bumped = steps.bump(
        chosen.c.provider_id, chosen.c.generation, chosen.c.decisive == 1,
        sa.exists(sa.select(counted.c.id))
    ).returning(steps.PROVIDERS.c.id).cte('bumped')
    claimed = steps.consumer(bumped).returning(
        steps.CONSUMERS.c.id).cte('claimed')
    allocated = steps.allocation(bumped.c.id, bumped).returning(
        steps.ALLOCATIONS.c.id).cte('allocated')
    held = binds.per_resource(
        sql.reservation_of_usage(counted, sa.exists(sa.select(bumped.c.id)))
        .returning(sql.RESERVATIONS.c.uuid), 0).cte('held_0')
    return sa.select(_verdict(
        sa.and_(*(sa.exists(sa.select(cte.c[name])) for cte, name in (
            (held, 'uuid'), (claimed, 'id'), (allocated, 'id')))),
        ~sa.exists(sa.select(counted.c.id))))


def _reserve_many_ctes(limit, count, request_id):
    """The reserve of ``count`` (two or more) resources, in four CTEs:
    ``wanted``, a row of binds per resource (``_resource_<i>``,
    ``_delta_<i>``, ``_uuid_<i>``) and its limit (``limit`` of that
    resource, read once); ``locked``, the project's usage rows of those
    resources locked in resource order (``ORDER BY resource FOR
    UPDATE``: two reserves, or a reserve and an end, of one project queue
    rather than deadlock) with whether each delta fits the row as locked,
    committed counts included; ``counted``, one UPDATE of every row, only
    if all of them fit (and, with ``request_id``, no reserve used it
    before); ``held``, one INSERT of every reservation. Its verdict is
    done if it inserted them all, untouched (nothing written, no error)
    otherwise: a row missing (first use) or a delta that does not fit
    leaves the decision to the locked path."""
    usages = sql.USAGES
    wanted = sa.union_all(*[binds.per_resource(sa.select(
        sa.cast(sa.bindparam('_resource'), sa.String).label('resource'),
        sa.cast(sa.bindparam('_delta'), sa.BigInteger).label('delta'),
        sa.cast(limit, sa.BigInteger).label('limit'),
        sa.cast(sa.bindparam('_uuid'), sa.String).label('uuid')), index)
        for index in range(count)]).cte('wanted')
    locked = (
        sa.select(usages.c.id, usages.c.project_id, usages.c.resource,
                  wanted.c.delta, wanted.c.uuid,
                  sql.fits(wanted.c.limit, wanted.c.delta).label('fits'))
        .join_from(usages, wanted, usages.c.resource == wanted.c.resource)
        .where(usages.c.project_id == sa.bindparam('_project_id'))
        .order_by(usages.c.resource)
        .with_for_update(of=usages)
        .cte('locked'))
    all_fit = (sa.select(sa.func.count()).select_from(locked)
               .where(locked.c.fits).scalar_subquery() == count)
    counted = (
        usages.update()
        .where(usages.c.id == locked.c.id, all_fit,
               *([_request_unseen()] if request_id else []))
        .values(reserved=usages.c.reserved + sa.case(
                    (locked.c.delta > 0, locked.c.delta), else_=0),
                updated_at=sa.bindparam('_now'))
        .returning(usages.c.id, usages.c.project_id, usages.c.resource,
                   locked.c.delta, locked.c.uuid)
        .cte('counted'))
    held = (sql.reservation_of_usage(counted, uuid=counted.c.uuid,
                                     delta=counted.c.delta)
            .returning(sql.RESERVATIONS.c.uuid).cte('held'))
    return sa.select(_verdict(
        sa.select(sa.func.count()).select_from(held).scalar_subquery()
        == count,
        ~sa.exists(sa.select(counted.c.id))))


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
    which the step-by-step end gives back); the usage rows of their
    resources locked in resource order (``locked``: ``ORDER BY resource
    FOR UPDATE``, so that two ends, or an end and a reserve, of one
    project queue rather than deadlock); then per resource the counts as
    ``END_RESERVED`` moves them and, for a commit, what each consumer
    holds as ``consumers.add`` changes it. Its verdict (``_verdict``) is
    done if it ended every reservation and moved every count, untouched
    if it ended none.

    One text per count, each reservation ended by a CTE of its own
    (``ended_<i>``) that looks its uuid up: a plan kept for any parameters
    of a list of uuids (``uuid IN (...)``) scans the whole table when it
    was made while the table was small (below some 500 rows), and keeps
    doing so as it grows. The end of one reservation, an attach's
    commit, is ``end_one_ctes``."""
    if count == 1:
        return end_one_ctes(target)
    commit = target == models.COMMITTED
    ended = sa.union_all(*[sa.select(_ended(
        target, sql.RESERVATIONS.c.uuid == sa.bindparam(
            binds.bind_name('uuid', index), type_=sa.String),
        name='ended_%d' % index)) for index in range(count)]).cte('ended')
    taken = _negative(ended.c.delta)
    groups = (
        sa.select(ended.c.resource,
                  _sum(_positive(ended.c.delta)).label('held'),
                  _sum(taken).label('taken'),
                  _sum(ended.c.delta).label('total'))
        .group_by(ended.c.resource).cte('groups'))
    usages = sql.USAGES
    # Locked before any is changed: one UPDATE of several rows would lock
    # them in the order of its plan.
    locked = (
        sa.select(usages.c.id, groups.c.held, groups.c.taken,
                  groups.c.total)
        .join_from(usages, groups, usages.c.resource == groups.c.resource)
        .where(usages.c.project_id == sa.bindparam('_project_id'))
        .order_by(usages.c.resource)
        .with_for_update(of=usages)
        .cte('locked'))
    counted = _counted(commit, [usages.c.id == locked.c.id], locked.c.held,
                       locked.c.taken, locked.c.total)
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
        binds.bind_name('uuid', 0), type_=sa.String),
        sql.RESERVATIONS.c.project_id)
    delta = ended.c.delta
    counted = _counted(commit, [sql.USAGES.c.project_id == ended.c.project_id,
                                sql.USAGES.c.resource == ended.c.resource],
                       _positive(delta), _negative(delta), delta)
    done: sa.ColumnElement[bool] = sa.exists(sa.select(counted.c.resource))
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


def _ended(target, chosen, *returning, name='ended'):
    """The CTE ``name``, ``end_reservations`` of the reservations
    ``chosen`` (for a rollback, of those holding no devices, which the
    step-by-step end gives back), returning ``returning`` besides its
    usual columns."""
    if target != models.COMMITTED:
        chosen = sa.and_(chosen, ~sql.RESERVATIONS.c.devices)
    return sql.end_reservations(chosen).returning(*returning).cte(name)


def _counted(commit, row, held, taken, total):
    """The CTE moving the counts of the usage rows found by ``row`` (a
    list of conditions) as ``END_RESERVED`` does: ``held`` off reserved
    and, for a ``commit``, ``total`` onto used, only where neither goes
    below zero (``taken``: the negative part)."""
    if not commit:
        taken = total = None
    return (sql.end_reserved(row, held, taken, total)
            .returning(sql.USAGES.c.resource).cte('counted'))


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
    return consumers.upsert(backend.POSTGRESQL).from_select(
        ['project_id', 'resource', 'consumer_id', 'used', 'created_at'],
        moved).returning(sql.CONSUMERS.c.resource).cte('added')


def _taken_off(key, taken, total, *where):
    """The CTE adding ``total`` to what the consumer of ``key`` (project,
    resource and consumer: the whole key, so that a plan kept for any
    parameters looks each row up by it) holds, where ``taken`` (the
    negative part) is below zero and ``where`` holds, and takes nothing
    below zero."""
    held = sql.CONSUMERS
    return (
        held.update()
        .where(held.c.project_id == key[0],
               held.c.resource == key[1],
               held.c.consumer_id == key[2],
               taken < 0, held.c.used + taken >= 0, *where)
        .values(used=held.c.used + total,
                updated_at=sa.bindparam('_now'))
        .returning(held.c.resource)
        .cte('taken_off'))
