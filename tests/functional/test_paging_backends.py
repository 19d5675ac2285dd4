"""``GET /v1/leases`` and ``GET /v1/reservations`` walked page by page on
PostgreSQL and MariaDB: over 2,500 rows every one comes exactly once, in
the listing's order (leases made at the same instant included), with and
without filters, and a page of leases is read in the same number of
queries whatever its size."""

import datetime
import random

import sqlalchemy as sa
import webtest

from cyquota.api import app
from cyquota.db import api as db_api
from cyquota.db import models
from tests import fixtures
from tests.unit.api import test_paging

ADMIN = test_paging.ADMIN
PROJECTS = ('p1', 'p2', 'p3')
COUNT = 2500


def _lease_rows():
    """2,500 leases of three projects in four statuses; a fifth of them
    share their instant with another."""
    rng = random.Random(28)
    rows = []
    for n in range(COUNT):
        instant = test_paging.T0 + datetime.timedelta(
            seconds=n // 2 if n % 5 == 0 else n, microseconds=n % 3)
        rows.append(('lease-%05d' % rng.randrange(10 ** 5) + '-%04d' % n,
                     rng.choice(PROJECTS),
                     rng.choice(('PENDING', 'ACTIVE', 'ENDED', 'ERROR')),
                     instant))
    return rows


def test_every_lease_once_in_order(backend):
    rows = _lease_rows()
    test_paging.add_leases(rows)
    client = webtest.TestApp(app.setup_app())

    def expected(project=None, status=None):
        return [i for i, p, s, c in sorted(
            rows, key=lambda row: (row[3], row[0]), reverse=True)
            if project in (None, p) and status in (None, s)]

    for query, headers, want in (
            ('limit=100', ADMIN, expected()),
            ('limit=97&status=ENDED', ADMIN, expected(status='ENDED')),
            ('limit=50&project_id=p2', ADMIN, expected('p2')),
            ('limit=33&status=ACTIVE', test_paging.member('p3'),
             expected('p3', 'ACTIVE'))):
        ids, sizes, _ = test_paging.walk(client, '/v1/leases?' + query,
                                         headers)
        assert ids == want, query
        assert len(set(ids)) == len(ids)
        assert sum(sizes) == len(want)

    counts = set()
    for query in ('limit=1', 'limit=500',
                  'limit=500&marker=%s' % expected()[100],
                  'limit=1&marker=%s' % expected()[100]):
        with fixtures.statements_sent() as sent:
            client.get('/v1/leases?' + query, headers=ADMIN)
        counts.add(len(sent) - (1 if 'marker' in query else 0))
    assert len(counts) == 1


def _add_reservations():
    """2,500 reservation rows of three projects in four statuses; their
    uuids, projects and statuses newest first (by id, as numbered)."""
    rng = random.Random(28)
    now = models.utcnow()
    with db_api.get_engine().begin() as conn:
        usages = {}
        for project in PROJECTS:
            usages[project] = conn.execute(sa.insert(models.QuotaUsage).values(
                project_id=project, resource='FPGA', used=0, reserved=0,
                created_at=now)).inserted_primary_key[0]
        rows = [dict(uuid='res-%04d' % n, project_id=rng.choice(PROJECTS),
                     resource='FPGA', delta=1, created_at=now,
                     status=rng.choice(models.STATUSES)) for n in range(COUNT)]
        for row in rows:
            row['usage_id'] = usages[row['project_id']]
        conn.execute(sa.insert(models.Reservation), rows)
        table = models.Reservation.__table__
        return conn.execute(
            sa.select(table.c.uuid, table.c.project_id, table.c.status)
            .order_by(table.c.id.desc())).mappings().all()


def test_every_reservation_once_in_order(backend):
    rows = _add_reservations()
    client = webtest.TestApp(app.setup_app())
    for query, project, status in (
            ('limit=100', None, None),
            ('limit=77&status=committed', None, 'committed'),
            ('limit=40&project_id=p1', 'p1', None),
            ('limit=9&project_id=p3&status=expired', 'p3', 'expired')):
        want = [row['uuid'] for row in rows
                if project in (None, row['project_id'])
                and status in (None, row['status'])]
        ids, sizes, _ = test_paging.walk(
            client, '/v1/reservations?' + query, ADMIN)
        assert ids == want, query
        assert sum(sizes) == len(want)
