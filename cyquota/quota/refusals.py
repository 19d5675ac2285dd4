"""The refusals log: a reserve for a consumer refused over quota, or by
an exhausted budget, is recorded, so that the refusal can be found by the
consumer (an instance uuid) after its caller lost the error (Nova drops
the body of Cyborg's bind error) (SPEC 3.7).

What refused it is kept as the 403 told it: the ``overs`` of an
OverQuota, or one entry of scope ``budget`` (``budget_entry``), which a
listing shows apart as ``budget``.

A record is written in a transaction of its own once the refused one has
rolled back (it changes nothing in the books); a failure to write it is
logged and leaves the refusal as it was. The rows are purged with the
ended reservations (``ledger.upkeep``).
"""

import datetime
import functools
import json

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import markers
from cyquota.db import models
from cyquota.db import refusal_log_models

LOG = logging.getLogger(__name__)

REFUSALS = refusal_log_models.Refusal.__table__


def record(context, project_id, consumer_id, request_id, overs):
    """Record that ``consumer_id``'s reserve (``request_id``) for
    ``project_id`` was refused by ``overs``; returns the record's uuid, or
    None when it could not be written (logged)."""
    uuid = uuidutils.generate_uuid()
    try:
        with db_api.writer_connection(context) as conn:
            conn.execute(REFUSALS.insert().values(
                uuid=uuid, project_id=project_id, consumer_id=consumer_id,
                request_id=request_id,
                user_id=getattr(context, 'user_id', None),
                overs=json.dumps([dict(over) for over in overs]),
                created_at=models.utcnow()))
    except db_exc.DBError:
        LOG.exception('Refusal of consumer %s in project %s over quota not '
                      'recorded', consumer_id, project_id)
        return None
    return uuid


#: The scope of the entry of a refusal by a budget.
BUDGET = 'budget'


def budget_entry(refused):
    """The entry recording ``refused`` (a BudgetExhausted): its project,
    resource, period and balance, of scope ``budget``."""
    return dict(refused.kwargs, scope=BUDGET)


def _view(row):
    entries = json.loads(row.overs)
    view = {'id': row.uuid, 'project_id': row.project_id,
            'consumer_id': row.consumer_id, 'request_id': row.request_id,
            'user_id': row.user_id, 'created_at': row.created_at,
            'overs': [e for e in entries if e['scope'] != BUDGET]}
    budget = [e for e in entries if e['scope'] == BUDGET]
    if budget:
        view['budget'] = dict(
            {key: value for key, value in budget[0].items()
             if key != 'scope'},
            **{key: datetime.datetime.fromisoformat(budget[0][key])
               for key in ('period_start', 'period_end')})
    return view


@db_api.retry_on_conflict
def list_refusals(context, project_id=None, consumer_id=None, limit=1000,
                  marker=None):
    """At most ``limit`` refusals as dicts ``{id, project_id, consumer_id,
    request_id, user_id, created_at, overs}`` (and ``budget`` where a
    budget refused it: ``{project_id, resource, period_start, period_end,
    balance_hours, requested_hours}``), newest first, after the one
    whose id is ``marker`` (InvalidQuery, 400, when the listing has none
    such)."""
    where = []
    if project_id is not None:
        where.append(REFUSALS.c.project_id == project_id)
    if consumer_id is not None:
        where.append(REFUSALS.c.consumer_id == consumer_id)
    query = (sa.select(REFUSALS).where(*where)
             .order_by(REFUSALS.c.id.desc()).limit(limit))
    with db_api.reader(context) as session:
        if marker is not None:
            found = markers.find(session, marker, functools.partial(
                _marker_row, where=where))
            query = query.where(REFUSALS.c.id < found.id)
        rows = session.execute(query).all()
    return [_view(row) for row in rows]


def _marker_row(uuid, where):
    """The refusal ``uuid`` among those ``where`` selects."""
    return sa.select(REFUSALS.c.id).where(REFUSALS.c.uuid == uuid, *where)
