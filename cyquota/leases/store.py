"""Lease rows read back as the views the API answers, the lease's lock,
and each project's count of leases (``lease_projects``); ``records``
writes the lease rows."""

import collections
import json

import sqlalchemy as sa
import uuid6

from cyquota.conf import CONF
from cyquota.db import backends
from cyquota.db import lease_models
from cyquota.db import markers
from cyquota import exception
from cyquota.lease_tables import calendar
from cyquota.leases import devices
from cyquota.leases import request as request_mod
from cyquota.placement import providers

_leases = lease_models.Lease.__table__
_projects = lease_models.LeaseProject.__table__

def new_id():
    """A new lease's or lease reservation's id: a UUID that begins with
    the time it was made (version 7), so that the rows of new leases go
    to the end of their tables' primary keys (InnoDB stores a table in
    its primary key's order: a random id writes to a random page, which
    a calendar larger than the buffer pool reads from disk first)."""
    return str(uuid6.uuid7())


#: How many leases a project holds (``held``): its ``lease_projects``
#: row's ``live`` and its ERROR leases whose end has not come, counted up
#: to ``most`` (a range of ``leases_project_status_end_idx``, read from
#: the index alone). Built once: a create sends it at every call.
_HELD = sa.select(
    sa.func.coalesce(
        sa.select(_projects.c.live)
        .where(_projects.c.project_id == sa.bindparam('project'))
        .scalar_subquery(), 0)
    + sa.select(sa.func.count()).select_from(
        sa.select(_leases.c.id)
        .where(_leases.c.project_id == sa.bindparam('project'),
               _leases.c.status == lease_models.ERROR,
               _leases.c.end_date > sa.bindparam('now'))
        .limit(sa.bindparam('most', type_=sa.Integer)).subquery())
    .scalar_subquery())

#: The project's row with ``taken`` more live leases (``lock_room``).
_TAKE = (_projects.update()
         .where(_projects.c.project_id == sa.bindparam('project'))
         .values(live=_projects.c.live + sa.bindparam('taken',
                                                      type_=sa.Integer),
                 updated_at=sa.bindparam('now')))

#: The project's row with a live lease less (``release_room``).
_RELEASE = (_projects.update()
            .where(_projects.c.project_id == sa.bindparam('project'),
                   _projects.c.live > 0)
            .values(live=_projects.c.live - 1))


def held(conn, project_id, now, most):
    """How many leases ``project_id`` holds (``max_leases_per_project``
    counts them): its PENDING and ACTIVE ones (its ``lease_projects`` row's
    ``live``) and its ERROR ones whose end has not come, counted up to
    ``most``: one query, whatever the number of leases."""
    return conn.execute(_HELD, dict(project=project_id, now=now,
                                    most=most)).scalar()


def _refuse_past(project_id, count):
    most = CONF.leases.max_leases_per_project
    if count >= most:
        raise exception.LeaseLimitExceeded(project_id=project_id,
                                           held=count, limit=most)


def check_room(conn, project_id, now):
    """Refuse (LeaseLimitExceeded) a new lease of a project that holds
    ``[leases] max_leases_per_project`` leases already (without locks: a
    create checks again under ``lock_room``)."""
    _refuse_past(project_id, held(conn, project_id, now,
                                  CONF.leases.max_leases_per_project))


def lock_room(conn, project_id, now, live=True):
    """Take a slot of the project's leases for a new lease, ``live``
    (PENDING or ACTIVE: counted in its row until ``release_room``) or not
    (ERROR), or refuse (LeaseLimitExceeded) when the project holds
    ``[leases] max_leases_per_project`` leases already; the caller's
    transaction, rolled back by the refusal, stores the lease.

    The project's ``lease_projects`` row is locked before any other row of
    the transaction, so that two creates of the project count one after
    the other; it is written, not only locked: on a Galera cluster a write
    reaches the other nodes (through certification) where a lock does not.
    A project's first create inserts it; a concurrent first insert fails on
    the primary key and the caller's transaction is retried
    (``db_api.retry_on_conflict``)."""
    taken = 1 if live else 0
    found = conn.execute(_TAKE, dict(project=project_id, taken=taken,
                                     now=now)).rowcount
    if not found:
        conn.execute(_projects.insert().values(
            project_id=project_id, live=taken, created_at=now))
    most = CONF.leases.max_leases_per_project
    _refuse_past(project_id, held(conn, project_id, now, most) - taken)


def release_room(conn, project_id):
    """A live lease of the project has ended: its slot is free (run before
    the transaction locks the project's quota rows, as ``lock_room``)."""
    conn.execute(_RELEASE, dict(project=project_id))


def lock(conn, lease_id):
    """Lock a lease's row; returns it, or raises LeaseNotFound."""
    row = conn.execute(sa.select(_leases).where(_leases.c.id == lease_id)
                       .with_for_update()).first()
    if row is None:
        raise exception.LeaseNotFound(lease_id=lease_id)
    return row


#: The ``status_reason`` of an ACTIVE lease a DELETE ended before its
#: scheduled end (ISO 8601, as the API writes dates); its ``end_date``
#: became the moment it ended.
ENDED_EARLY = 'ended early by DELETE; scheduled end was %s'
#: The ``status_reason`` of a PENDING lease a DELETE ended: its window,
#: kept, never began.
CANCELLED = 'cancelled by DELETE before its start'


def ending(row, now, deleted):
    """``(end_date, status_reason)`` of lease ``row`` ending ``now``: by
    a DELETE (``deleted``) before its scheduled end, an ACTIVE lease's
    window is cut at ``now`` and a PENDING one's kept, the reason saying
    which; at its scheduled end, it is as it was."""
    if not deleted:
        return row.end_date, row.status_reason
    if row.status == lease_models.PENDING:
        return row.end_date, CANCELLED
    if row.end_date > now:
        return now, ENDED_EARLY % calendar.isotime(row.end_date)
    return row.end_date, row.status_reason  # Its end had come already.


def every_id(conn):
    """The id of every lease stored (each a consumer of cyquota's own)."""
    return conn.execute(sa.select(_leases.c.id)).scalars()


def due(conn, status, column, now, batch):
    """Ids of leases in ``status`` whose ``column`` date has come."""
    return conn.execute(
        sa.select(_leases.c.id)
        .where(_leases.c.status == status, _leases.c[column] <= now)
        .order_by(_leases.c[column]).limit(batch)).scalars().all()


def _reservation_request(row):
    return request_mod.ReservationRequest(
        row.resource, row.amount, json.loads(row.member_of), row.member_key,
        row.id)


def _reservations_of_leases(conn, lease_ids):
    """``{lease id: [ReservationRequest]}`` of many leases in one query,
    each list in request order."""
    found = collections.defaultdict(list)
    for row in calendar.lease_reservations(conn, lease_ids):
        found[row.lease_id].append(_reservation_request(row))
    return found


def request_of(conn, row):
    """The ``LeaseRequest`` a stored lease row stands for."""
    return request_mod.LeaseRequest(row.name, row.start_date, row.end_date,
                                    _reservations_of_leases(
                                        conn, [row.id])[row.id])


def _provider_ids(held):
    return {part[0] for parts in held.values() for part in parts}


def _names(conn, held):
    """``{provider_id: (uuid, name, root uuid)}`` of the providers of
    ``held``, in one query (none when it holds nothing)."""
    ids = _provider_ids(held)
    return devices.names(conn, ids) if ids else {}


def _allocation_views(held, view, names):
    """``{lease reservation id: [view(provider_id, amount, (uuid, name,
    root uuid))]}`` of ``held`` (``{lease reservation id: [(provider_id,
    rc, amount)]}``), its providers' ``names`` given."""
    return {key: [view(provider_id, amount, names[provider_id])
                  for provider_id, _rc, amount in parts]
            for key, parts in held.items()}


def _api_allocation(_provider_id, amount, names):
    return {'id': names[0], 'resource_provider_name': names[1],
            'amount': amount}


def api_allocations(conn, held):
    """``held``'s allocations as the API shows them: each device's uuid,
    name and amount."""
    return _allocation_views(held, _api_allocation, _names(conn, held))


def filter_allocations(conn, held):
    """``held``'s allocations as the usage-enforcement filters get them
    (Blazar's form): each device's uuid and name, and in ``extra`` its
    root provider and aggregates."""
    ids = _provider_ids(held)
    aggregates = providers.aggregates_of(conn, ids) if ids else {}
    return _allocation_views(held, lambda provider_id, _n, names: {
        'id': names[0], 'resource_provider_name': names[1],
        'extra': {'root_provider': names[2],
                  'aggregates': sorted(aggregates.get(provider_id, ()))}},
        _names(conn, held))


def _view(row, reservations, allocations):
    """The API's view of lease ``row`` with its ``reservations`` (in
    request order) and ``allocations`` (``api_allocations``)."""
    return {
        'id': row.id, 'name': row.name, 'project_id': row.project_id,
        'user_id': row.user_id,
        'start_date': calendar.isotime(row.start_date),
        'end_date': calendar.isotime(row.end_date), 'status': row.status,
        'status_reason': row.status_reason,
        'created_at': calendar.isotime(row.created_at),
        'updated_at': calendar.isotime(row.updated_at),
        'reservations': [
            {'id': r.id, 'resource_type': r.resource_type,
             'amount': r.amount, 'member_of': r.member_of,
             'member_key': r.member_key,
             'allocations': allocations.get(r.id, [])}
            for r in reservations]}


def views(conn, rows):
    """Lease rows as the API answers them, in three queries whatever
    their number: reservations, allocations, provider names."""
    if not rows:
        return []
    ids = [row.id for row in rows]
    allocations = api_allocations(conn, calendar.lease_devices(conn, ids))
    reservations = _reservations_of_leases(conn, ids)
    return [_view(row, reservations[row.id], allocations) for row in rows]


def view(conn, row):
    """A lease row as the API answers it."""
    return views(conn, [row])[0]


def created_view(row, request, choice):
    """The view of a lease just stored: ``records.insert``'s row, its
    ``request`` and the devices chosen (a ``devices.Choice``, with their
    names); nothing is read."""
    return _view(row, request.reservations, _allocation_views(
        choice.parts, _api_allocation, choice.names))


def read(conn, lease_id):
    row = conn.execute(sa.select(_leases)
                       .where(_leases.c.id == lease_id)).first()
    if row is None:
        raise exception.LeaseNotFound(lease_id=lease_id)
    return row


#: Newest first: ``id`` orders leases made in the same microsecond.
_NEWEST_FIRST = (_leases.c.created_at.desc(), _leases.c.id.desc())
#: The index that serves the order, by (project named, status named), so
#: that a page costs the same however many leases there are; a status
#: alone is filtered from the scan of (created_at, id).
_ORDERED_BY = {(False, False): 'leases_created_idx',
               (True, False): 'leases_project_created_idx',
               (True, True): 'leases_project_status_idx'}


def _after(conn, marker, project_id):
    """The condition of the rows after the lease ``marker`` in
    ``_NEWEST_FIRST`` order, of ``project_id`` (any project: None)."""
    def query_of(lease_id):
        query = sa.select(_leases.c.created_at).where(
            _leases.c.id == lease_id)
        if project_id is not None:
            query = query.where(_leases.c.project_id == project_id)
        return query
    found = markers.find(conn, marker, query_of)
    # The first term bounds the index range; the second leaves out the
    # marker and the leases of its instant listed before it.
    return sa.and_(_leases.c.created_at <= found.created_at,
                   sa.or_(_leases.c.created_at < found.created_at,
                          _leases.c.id < marker))


def rows(conn, project_id=None, status=None, limit=None, marker=None):
    """Lease rows newest first, at most ``limit`` of them (all when None),
    after the lease whose id is ``marker``; in two queries at most."""
    query = sa.select(_leases).order_by(*_NEWEST_FIRST)
    if project_id is not None:
        query = query.where(_leases.c.project_id == project_id)
    if status is not None:
        query = query.where(_leases.c.status == status)
    if marker is not None:
        query = query.where(_after(conn, marker, project_id))
    if limit is not None:
        query = query.limit(limit)
    index = _ORDERED_BY.get((project_id is not None, status is not None))
    if index is not None:
        # MariaDB's planner sorts the whole table for a first page, and
        # reads a project's index from its newest lease down to the
        # marker rather than from the marker on; named, it ranges.
        query = backends.of(conn).through_index(query, _leases, index)
    return conn.execute(query).all()
