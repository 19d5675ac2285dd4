"""A conductor killed (SIGKILL) mid-expiry or mid-lease-end, on PostgreSQL
and MariaDB.

Two ``cyquota-conductor`` processes run the periodic expiry and lease
ends on one database. Reservations and active leases of many projects all
come due at one instant; the first conductor whose log shows it expiring
(or ending leases) is killed while work of that kind is still due, with
whatever transaction it had open. The other conductor finishes: each due
reservation is expired exactly once and each lease ended exactly once, so
the counts equal the surviving rows (none negative, no drift, the devices
of the leases free) and no observation broke the limit. It still answers
RPC. Without its take-over the due work is never done and the test fails
waiting for it.
"""

import collections
import datetime
import re
import signal
import time

import pytest
import sqlalchemy as sa

from cyquota.conductor import rpc
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import placement_models
from cyquota import leases
from cyquota.quota import QUOTAS
from tests.functional import ledger_books
from tests.functional import test_rpc_conductors
from tests.unit.placement.conftest import Tree

pytestmark = pytest.mark.timeout(120)

LIMIT = test_rpc_conductors.LIMIT

PROJECTS = ['killed-%02d' % n for n in range(24)]
# Per project, exactly LIMIT of each resource at the kill: FPGA 1 used,
# 1 held, 2 due, 2 leased; GPU 1 used, 1 held, 4 due.
COMMITTED = {'FPGA': 1, 'GPU': 1}
HELD = {'FPGA': 1, 'GPU': 1}
DUE = {'FPGA': 1, 'GPU': 2}
DUE_RESERVES = 2
LEASES_EACH = 2
# Creating all of that takes about 2 s on an idle machine; then it comes
# due at once (a set-up still running then fails: the dates are past).
_SETUP_SECONDS = 6
_SETTLE_SECONDS = 30

# What each conductor logs once it has committed a piece of the work.
_AT_WORK = {'expiry': re.compile(r'Expired \d+ reservation\(s\) of project'),
            'lease end': re.compile(r'Lease \S+ of project \S+ ended')}

_reservations = models.Reservation.__table__
_leases = lease_models.Lease.__table__


def _due_work():
    """Due work not done yet (as committed): reservations past their
    expiry still reserved, active leases past their end."""
    now = models.utcnow()
    with db_api.get_engine().connect() as conn:
        return {
            'expiry': conn.execute(
                sa.select(sa.func.count()).select_from(_reservations)
                .where(_reservations.c.status == models.RESERVED,
                       _reservations.c.expire < now)).scalar(),
            'lease end': conn.execute(
                sa.select(sa.func.count()).select_from(_leases)
                .where(_leases.c.status == lease_models.ACTIVE,
                       _leases.c.end_date <= now)).scalar()}


def _create_work(ctx, due_at):
    QUOTAS.limits.set_registered_limit(ctx, 'FPGA', LIMIT)
    QUOTAS.limits.set_registered_limit(ctx, 'GPU', LIMIT)
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev0', parent='cn1', inventory={
        'FPGA': {'total': LEASES_EACH * len(PROJECTS)}})
    for project in PROJECTS:
        QUOTAS.commit(ctx, project, QUOTAS.reserve(ctx, project, COMMITTED))
        QUOTAS.reserve(ctx, project, HELD, expire=3600)
        for _ in range(LEASES_EACH):
            made = leases.LEASES.create(ctx, project, dict(
                end_date=due_at.isoformat(),
                reservations=[{'resource_type': 'accelerator:FPGA',
                               'amount': 1}]))
            assert made['status'] == lease_models.ACTIVE
        for _ in range(DUE_RESERVES):
            QUOTAS.reserve(ctx, project, DUE, expire=due_at)


def _first_at_work(conductors, kind, timeout):
    """The first of ``conductors`` whose log shows work of ``kind``."""
    deadline = time.monotonic() + timeout
    while True:
        for conductor in conductors:
            if (conductor.log.exists()
                    and _AT_WORK[kind].search(conductor.log.read_text())):
                return conductor
        assert time.monotonic() < deadline, 'no conductor did the %s' % kind
        time.sleep(0.01)


def _wait_until_done(timeout):
    deadline = time.monotonic() + timeout
    while True:
        left = _due_work()
        if not any(left.values()):
            return
        assert time.monotonic() < deadline, (
            'due work left after the kill: %s' % left)
        time.sleep(0.2)


@pytest.mark.usefixtures('seconds_long')
@pytest.mark.parametrize('killed_in', ['expiry', 'lease end'])
def test_conductor_killed_mid_work_the_other_finishes(conductors, rabbit,
                                                      ctx, killed_in):
    # A small batch makes the work many short transactions that the two
    # conductors take turns on.
    settings = dict(conductor={'expire_interval': 1, 'lease_interval': 1},
                    quota={'batch_size': 2})
    pair = [conductors('conductor-%d' % n, **settings) for n in (1, 2)]
    due_at = (datetime.datetime.now(datetime.timezone.utc)
              + datetime.timedelta(seconds=_SETUP_SECONDS))
    with test_rpc_conductors._LimitWatch() as watch:
        _create_work(ctx, due_at)
        killed = _first_at_work(pair, killed_in, _SETUP_SECONDS + 10)
        # Stopped first, so that what is still due is what it dies with.
        killed.process.send_signal(signal.SIGSTOP)
        left = _due_work()
        killed.kill()
        survivor, = [c for c in pair if c is not killed]
        _wait_until_done(_SETTLE_SECONDS)
    print('%s killed in its %s with %s still due' % (killed.host, killed_in,
                                                     left))
    assert left[killed_in], 'the %s was over before the kill' % killed_in
    assert watch.reads and watch.breaches == []

    # Each due reservation expired once, each lease ended once: the counts
    # are the surviving rows' and what the leases held is given back.
    statuses = collections.Counter(
        row['status'] for row in ledger_books.table('reservations'))
    one_call = len(PROJECTS) * len(DUE)  # rows of a reserve in each project
    assert statuses == {models.COMMITTED: one_call, models.RESERVED: one_call,
                        models.EXPIRED: one_call * DUE_RESERVES}
    ledger_books.assert_books_balance(collections.defaultdict(lambda: LIMIT))
    assert {(u['leased'], u['promised'])
            for u in ledger_books.table('quota_usages')} == {(0, 0)}
    assert ledger_books.table('drift_events') == []
    assert {lease['status'] for lease in ledger_books.table('leases')} == {
        lease_models.ENDED}
    assert ledger_books.table('device_allocations') == []
    assert {a['status'] for a in ledger_books.table(
        placement_models.LeaseAllocation.__tablename__)} == {
        lease_models.ENDED}
    lease_ids = {lease['id'] for lease in ledger_books.table('leases')}
    assert {row['used'] for row in ledger_books.table('consumer_usages')
            if row['consumer_id'] in lease_ids} == {0}

    usage = rpc.get_client(timeout=30).prepare(server=survivor.host).call(
        ctx, 'get_usage', project_id=PROJECTS[0])
    assert {resource: (usage[resource]['used'], usage[resource]['reserved'])
            for resource in DUE} == {
        resource: (COMMITTED[resource], HELD[resource]) for resource in DUE}
