"""The pages of a project's budget entries, newest first (by id), and
how an entry is shown: hours, not unit-seconds."""

import functools

import sqlalchemy as sa

from cyquota.budgets import rows
from cyquota.budgets import units
from cyquota.db import api as db_api
from cyquota.db import markers

_COLUMNS = (rows.ENTRIES.c.id, rows.ENTRIES.c.project_id,
            rows.ENTRIES.c.resource, rows.ENTRIES.c.kind,
            rows.ENTRIES.c.seconds, rows.ENTRIES.c.period_start,
            rows.ENTRIES.c.at, rows.ENTRIES.c.actor, rows.ENTRIES.c.reason,
            rows.ENTRIES.c.lease_id)


def view(entry):
    """An entry's document: ``id``, ``kind``, ``hours`` (signed: what it
    adds to the balance), ``resource``, ``period_start``, ``at``,
    ``actor``, ``reason``, ``lease_id``."""
    return {'id': entry['id'], 'kind': entry['kind'],
            'hours': units.hours(entry['seconds']),
            'resource': entry['resource'],
            'period_start': entry['period_start'], 'at': entry['at'],
            'actor': entry['actor'], 'reason': entry['reason'],
            'lease_id': entry['lease_id']}


def _marker_row(project_id, marker):
    # An id is a number of at most 18 digits; any other marker is no
    # entry's (-1).
    number = int(marker) if marker.isdigit() and len(marker) < 19 else -1
    return sa.select(rows.ENTRIES.c.id).where(
        rows.ENTRIES.c.project_id == project_id,
        rows.ENTRIES.c.id == number)


def page(context, project_id, limit, marker=None):
    """At most ``limit`` entries of ``project_id`` older than the entry
    whose id is ``marker`` (InvalidQuery when the project has no such
    entry), newest first."""
    query = (sa.select(*_COLUMNS)
             .where(rows.ENTRIES.c.project_id == project_id)
             .order_by(rows.ENTRIES.c.id.desc()).limit(limit))
    with db_api.reader_connection(context) as conn:
        if marker is not None:
            found = markers.find(conn, marker, functools.partial(
                _marker_row, project_id))
            query = query.where(rows.ENTRIES.c.id < found.id)
        return [view(row._mapping) for row in conn.execute(query)]
