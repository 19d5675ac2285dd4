"""The ledger's reservation rows, newest first, a page at a time.

Newest first is ``id`` descending (the rows' autoincrement key): the
primary key serves it, a project's rows the index on (project_id, id), so
that a page costs the same however many rows there are. The marker is the
``uuid`` of the previous page's last row.
"""

import re

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception

_reservations = models.Reservation.__table__
#: What a reservation uuid can be: a marker that cannot is no row's (and
#: is not sent to a database, which might refuse its text).
_UUID = re.compile(r'[\x21-\x7e]{1,36}')


def _after(session, marker, project_id):
    """The condition of the rows after the reservation ``marker``;
    InvalidQuery (400) when ``project_id`` (or any project, when None) has
    no such row."""
    found = None
    if _UUID.fullmatch(marker):
        query = sa.select(_reservations.c.id).where(
            _reservations.c.uuid == marker)
        if project_id is not None:
            query = query.where(_reservations.c.project_id == project_id)
        found = session.execute(query).scalar()
    if found is None:
        raise exception.InvalidQuery(detail='marker [%s] not found' % marker)
    return _reservations.c.id < found


@db_api.retry_on_conflict
def page(context, project_id=None, status=None, limit=1000, marker=None):
    """At most ``limit`` reservation rows as dicts, newest first, after
    the one whose uuid is ``marker``; in two queries at most."""
    query = (sa.select(_reservations).order_by(_reservations.c.id.desc())
             .limit(limit))
    if status is not None:
        query = query.where(_reservations.c.status == status)
    if project_id is not None:
        query = query.where(_reservations.c.project_id == project_id)
        # MariaDB's planner reads a project's index from its newest row
        # down to the marker rather than from the marker on; named, it
        # ranges (InnoDB keys end with the primary key, so the (project,
        # status) index is ordered by id too).
        index = ('reservations_project_status_idx' if status is not None
                 else 'reservations_project_id_idx')
        for dialect in ('mysql', 'mariadb'):
            query = query.with_hint(_reservations,
                                    'FORCE INDEX (%s)' % index, dialect)
    with db_api.reader(context) as session:
        if marker is not None:
            query = query.where(_after(session, marker, project_id))
        rows = session.execute(query).mappings().all()
    return [dict(row) for row in rows]
