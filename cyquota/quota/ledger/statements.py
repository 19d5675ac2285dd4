"""The ledger's SQL statements, built once: SQLAlchemy then only binds
parameters (a statement built per call costs as much CPU as a round trip).

Bind names of UPDATEs start with ``_``: they must differ from the column
names. Each is ``_`` and a field of a NamedTuple here, which the ledger
fills to run the statement (``binds``).

Every UPDATE that changes ``used`` or ``leased`` moves the row's meter
first, in the same write (``cyquota.db.meter.advance``: its binds
``_now_s`` and ``_period_s`` are derived from the ``now`` of the
statement's NamedTuple, ``binds``); a reserve that adds holdings takes
them only where the row's budget, if any, has a balance left
(``fits``).
"""

import datetime
import functools
import typing

import sqlalchemy as sa
from sqlalchemy.sql import visitors

from cyquota.db import meter
from cyquota.db import models

USAGES = models.QuotaUsage.__table__
RESERVATIONS = models.Reservation.__table__
CONSUMERS = models.ConsumerUsage.__table__
DRIFT = models.DriftEvent.__table__

LOCK_ALL_USAGES = (
    sa.select(USAGES.c.id, USAGES.c.resource, USAGES.c.used,
              USAGES.c.reserved, USAGES.c.promised, USAGES.c.leased,
              USAGES.c.metered, USAGES.c.metered_at, USAGES.c.budget_base)
    .where(USAGES.c.project_id == sa.bindparam('project_id'))
    .order_by(USAGES.c.resource)
    .with_for_update())
LOCK_USAGES = LOCK_ALL_USAGES.where(
    USAGES.c.resource.in_(sa.bindparam('resources', expanding=True)))


def limit_of(limit, resource):
    """``limit`` (a model's ``limit_sql()``, over the bind ``_resource``)
    of the resource the column ``resource`` names, row by row."""
    return visitors.replacement_traverse(
        limit, {}, lambda element, **_kw: resource if (
            isinstance(element, sa.BindParameter)
            and element.key == '_resource') else None)


@functools.lru_cache(maxsize=16)
def lock_usages_with_limits(model):
    """``LOCK_USAGES`` with each row's ``limit`` under ``model`` (binds
    ``_project_id`` and ``_default`` too; the limits' rows are read, not
    locked), or None where its limits are not in SQL."""
    limit = model.limit_sql()
    if limit is None:
        return None
    return LOCK_USAGES.add_columns(
        limit_of(limit, USAGES.c.resource).label('limit'))


INSERT_USAGE = USAGES.insert()
INSERT_RESERVATIONS = RESERVATIONS.insert()
# A locked row written back: its meter moved, then its counts.
WRITE_USAGE = meter.write_counts(USAGES)
THE_USAGE = (USAGES.c.project_id == sa.bindparam('_project_id'),
             USAGES.c.resource == sa.bindparam('_resource'))
RESERVE_COLUMNS = ('uuid', 'delta', 'expire', 'status', 'request_id',
                   'consumer_id', 'devices', 'created_at')


class Reserve(typing.NamedTuple):
    """The binds a reserve's statements share (``_project_id``, and so
    on); ``default``: the limit of a resource the limit source does not
    know, where the statement reads the limits itself."""

    project_id: str
    request_id: typing.Optional[str]
    now: datetime.datetime
    expire: typing.Optional[datetime.datetime]
    status: str
    consumer_id: typing.Optional[str]
    devices: bool
    created_at: datetime.datetime
    default: typing.Optional[int]
    #: Of a reserve that claims a device in its statement
    #: (``placement.claim_steps``): who claims, and what.
    user_id: typing.Optional[str] = None
    device_class: typing.Optional[str] = None
    device_amount: typing.Optional[int] = None


class Resource(typing.NamedTuple):
    """The binds of a reserve that differ by resource; ``limit``, where
    the statement does not read it."""

    resource: str
    delta: int
    limit: typing.Optional[int]
    uuid: str


class Claimed(typing.NamedTuple):
    """The binds of a claim's steps run one by one, of the provider its
    first step read (``placement.claim_steps``)."""

    provider_id: typing.Optional[int]
    generation: typing.Optional[int]


def reservation_of_usage(usage, *where, **columns):
    """The INSERT of a reserve's row from its usage row (``usage``, a
    table or CTE with ``id``, ``project_id`` and ``resource``, filtered by
    ``where``), the rest bound as ``_uuid``, ``_delta``, and so on, but
    for the ``columns`` given (``uuid=...``: an expression)."""
    return RESERVATIONS.insert().from_select(
        ['usage_id', 'project_id', 'resource', *RESERVE_COLUMNS],
        sa.select(usage.c.id, usage.c.project_id, usage.c.resource,
                  *[columns[name] if name in columns else
                    sa.bindparam('_' + name, type_=RESERVATIONS.c[name].type)
                    for name in RESERVE_COLUMNS])
        .where(*where))


# A reserve's row, its usage row's id read by the INSERT itself.
INSERT_RESERVATION_OF_USAGE = reservation_of_usage(USAGES, *THE_USAGE)


def end_reserved(rows, held, taken=None, used=None):
    """The UPDATE of the usage ``rows`` (conditions) that ends reserved
    rows: ``held`` (their positive deltas) off reserved and, for a
    commit, ``used`` (what it adds) onto used, only where neither goes
    below zero even row by row (``taken``: the negative deltas a commit
    applies); the meter moved first."""
    where = [*rows, USAGES.c.reserved >= held]
    counts = [('reserved', USAGES.c.reserved - held),
              ('updated_at', sa.bindparam('_now'))]
    if used is not None:
        where.append(USAGES.c.used + taken >= 0)
        counts.append(('used', USAGES.c.used + used))
    return (USAGES.update().where(*where)
            .ordered_values(*meter.advance(USAGES), *counts))


# The end of reserved rows of one resource (``_taken`` and ``_used`` are
# 0 but for a commit).
END_RESERVED = end_reserved(THE_USAGE, sa.bindparam('_held'),
                            sa.bindparam('_taken'), sa.bindparam('_used'))


class Move(typing.NamedTuple):
    """The binds of ``END_RESERVED``."""

    project_id: str
    resource: str
    held: int
    taken: int
    used: int
    now: datetime.datetime


REQUEST_SEEN = (
    sa.select(RESERVATIONS.c.id)
    .where(RESERVATIONS.c.project_id == sa.bindparam('_project_id'),
           RESERVATIONS.c.request_id == sa.bindparam('_request_id'))
    .limit(1))
RESERVATION_COLUMNS = (
    RESERVATIONS.c.id, RESERVATIONS.c.uuid, RESERVATIONS.c.resource,
    RESERVATIONS.c.delta, RESERVATIONS.c.status, RESERVATIONS.c.expire,
    RESERVATIONS.c.consumer_id, RESERVATIONS.c.devices)
FIND_RESERVATIONS = (
    sa.select(*RESERVATION_COLUMNS)
    .where(RESERVATIONS.c.project_id == sa.bindparam('_project_id'),
           RESERVATIONS.c.uuid.in_(sa.bindparam('_uuids', expanding=True)))
    # Creation order, so a batch's result never depends on how its uuids
    # happen to sort.
    .order_by(RESERVATIONS.c.id))
# By uuid alone, so that InnoDB locks the rows through the uuid index and
# no other (see LOCK_RESERVED_BY_ID); the project is checked afterwards.
LOCK_RESERVATIONS = (
    sa.select(RESERVATIONS.c.project_id, *RESERVATION_COLUMNS)
    .where(RESERVATIONS.c.uuid.in_(sa.bindparam('_uuids', expanding=True)))
    .order_by(RESERVATIONS.c.id)
    .with_for_update())


def ending(chosen):
    """The UPDATE that ends the reservations ``chosen`` (a condition on
    their uuids) that are still reserved, of the project, and not due
    (one whose expiry has passed is not ended here: see settle).

    The rows are found by uuid alone: the rest of the condition is one
    ``IS TRUE`` test, which no index serves. Given ``project_id = $1 AND
    status = $2`` as well, PostgreSQL's plan for a table it has not
    analyzed yet (a new or fast-growing one) walks the project's reserved
    rows in ``reservations_project_status_idx``, so a commit would cost as
    much as the project has open reservations; and a prepared statement
    keeps that plan."""
    return (
        RESERVATIONS.update()
        .where(chosen, sa.and_(
            RESERVATIONS.c.project_id == sa.bindparam('_project_id'),
            RESERVATIONS.c.status == models.RESERVED,
            RESERVATIONS.c.expire >= sa.bindparam('_due_before')
        ).self_group().is_(sa.true()))
        .values(status=sa.bindparam('_status'),
                updated_at=sa.bindparam('_now')))


def end_reservations(chosen):
    """Where UPDATE ... RETURNING exists, one statement locks, ends
    (``ending``) and reads the reservations ``chosen``."""
    return ending(chosen).returning(*RESERVATION_COLUMNS)


END_RESERVATIONS_RETURNING = end_reservations(
    RESERVATIONS.c.uuid.in_(sa.bindparam('_uuids', expanding=True)))


class End(typing.NamedTuple):
    """The binds of an end of reservations (``END_RESERVATIONS_RETURNING``,
    ``FIND_RESERVATIONS``, ``LOCK_RESERVATIONS``, a one statement's):
    of those of one statement, ``_uuid_<i>``, ``Ended``."""

    project_id: str
    uuids: typing.List[str]
    status: str
    now: datetime.datetime
    due_before: datetime.datetime


class Ended(typing.NamedTuple):
    """The bind of each reservation a one statement ends."""

    uuid: str


DUE_RESERVATIONS = (
    sa.select(RESERVATIONS.c.id)
    .where(RESERVATIONS.c.project_id == sa.bindparam('_project_id'),
           RESERVATIONS.c.status == models.RESERVED,
           RESERVATIONS.c.expire < sa.bindparam('_now'))
    .order_by(RESERVATIONS.c.id)
    .limit(sa.bindparam('_batch')))


class Due(typing.NamedTuple):
    """The binds of ``DUE_RESERVATIONS``."""

    project_id: str
    now: datetime.datetime
    batch: int


# Locked by primary key only: InnoDB locks the index entries a locking read
# passes through, and a secondary index entry locked before its row would
# deadlock with a commit, which locks the row (by uuid) and then changes
# that entry.
# On a small table MariaDB's optimizer would rather read the (status,
# expire) index, which covers the query: it runs through the primary key
# (``Backend.through_index``, where it runs).
LOCK_RESERVED_BY_ID = (
    sa.select(*RESERVATION_COLUMNS)
    .where(RESERVATIONS.c.id.in_(sa.bindparam('_ids', expanding=True)),
           RESERVATIONS.c.status == models.RESERVED)
    .order_by(RESERVATIONS.c.id)
    .with_for_update())
SET_STATUS = (
    RESERVATIONS.update()
    .where(RESERVATIONS.c.id.in_(sa.bindparam('_ids', expanding=True)))
    .values(status=sa.bindparam('_status'),
            updated_at=sa.bindparam('_now')))


class Change(typing.NamedTuple):
    """The binds of ``SET_STATUS`` and ``LOCK_RESERVED_BY_ID``."""

    ids: typing.List[int]
    status: str
    now: datetime.datetime


def add_to_consumer(resource, consumer_id, delta, taken=None):
    """The UPDATE adding ``delta`` to what ``consumer_id`` holds of
    ``resource`` in the project, only where ``taken`` (by default
    ``delta``: its negative part) takes nothing below zero."""
    return (
        CONSUMERS.update()
        .where(CONSUMERS.c.project_id == sa.bindparam('_project_id'),
               CONSUMERS.c.resource == resource,
               CONSUMERS.c.consumer_id == consumer_id,
               CONSUMERS.c.used + (delta if taken is None else taken) >= 0)
        .values(used=CONSUMERS.c.used + delta,
                updated_at=sa.bindparam('_now')))


ADD_TO_CONSUMER = add_to_consumer(sa.bindparam('_resource'),
                                  sa.bindparam('_consumer_id'),
                                  sa.bindparam('_delta'))


class ConsumerChange(typing.NamedTuple):
    """The binds of ``ADD_TO_CONSUMER``."""

    project_id: str
    resource: str
    consumer_id: str
    delta: int
    now: datetime.datetime


def fits(limit, delta=None):
    """Whether ``delta`` (an SQL expression; by default the bind
    ``_delta``) fits the usage row: a positive one if the total, with what
    leases are promised, stays within ``limit`` (an SQL expression; below
    zero: unlimited) and the largest count, and the row's budget, if it
    has one, has a balance left at ``_now_s`` (``meter.allows``); a
    negative one (a detach), which no budget refuses, if ``used`` covers
    it."""
    if delta is None:
        delta = sa.cast(sa.bindparam('_delta'), sa.BigInteger)
    total = USAGES.c.used + USAGES.c.reserved + delta
    return sa.or_(
        sa.and_(delta > 0, total <= models.MAX_COUNT,
                sa.or_(limit < 0, total + USAGES.c.promised <= limit),
                meter.allows(USAGES)),
        sa.and_(delta < 0, USAGES.c.used + delta >= 0))


def reserve_if_fits(limit):
    """The UPDATE taking ``_delta`` on a usage row only if it ``fits``
    ``limit``: a positive one is added to reserved; a negative one
    changes no count."""
    delta = sa.cast(sa.bindparam('_delta'), sa.BigInteger)
    return (USAGES.update()
            .where(*THE_USAGE, fits(limit))
            .values(reserved=USAGES.c.reserved
                    + sa.case((delta > 0, delta), else_=0),
                    updated_at=sa.bindparam('_now')))
