"""The ledger's invariants (SPEC 6), read from the database after a run:
counts equal the surviving reservation rows, nothing is negative, no pair
has two usage rows, and no project is over its limit."""

import collections

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models


def table(name):
    """Every row of table ``name`` as dicts."""
    rows = models.Base.metadata.tables[name]
    with db_api.get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(rows)).mappings()]


def over_limit(observations):
    """The observations ``(project, resource, limit, used, reserved)`` that
    break used + reserved <= limit, or show a count below zero."""
    return [o for o in observations
            if min(o[-2:]) < 0 or 0 <= o[2] < o[3] + o[4]]


def assert_books_balance(limits):
    """Each usage row equals its reservation rows: ``reserved`` the
    positive deltas of ``reserved`` rows, ``used`` the deltas of committed
    rows (releases included) less what drift recorded as not taken; none
    negative, none over ``limits`` ({(project, resource): limit}).

    Returns the reservation rows by uuid.
    """
    rows = {r['uuid']: r for r in table('reservations')}
    reserved, used = collections.Counter(), collections.Counter()
    for row in rows.values():
        key = (row['project_id'], row['resource'])
        if row['status'] == models.RESERVED and row['delta'] > 0:
            reserved[key] += row['delta']
        elif row['status'] == models.COMMITTED:
            used[key] += row['delta']
    drift = table('drift_events')
    for event in drift:
        if event['kind'] == 'used_below_zero':
            used[(event['project_id'], event['resource'])] += (
                event['applied'] - event['requested'])
    assert 'reserved_below_zero' not in {e['kind'] for e in drift}
    usages = table('quota_usages')
    assert len(usages) == len({(u['project_id'], u['resource'])
                               for u in usages})
    for usage in usages:
        key = (usage['project_id'], usage['resource'])
        assert (usage['used'], usage['reserved']) == (used[key],
                                                      reserved[key]), key
        assert min(usage['used'], usage['reserved']) >= 0, key
        assert usage['used'] + usage['reserved'] <= limits[key], key
    return rows
