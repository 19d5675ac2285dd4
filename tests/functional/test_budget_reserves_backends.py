"""Budgets against concurrent reserves and lease charges, on PostgreSQL
and MariaDB.

Processes reserve at once, over and over, against one usage row with a
budget (``budget_base``, set as the budgets' layer sets it). Whatever
runs beside it, a reserve passes exactly where a judge taking them one
at a time would let it through at the instant it ran: where the balance
at that instant is above zero (SPEC 3.8). Reserves do not spend; what
runs does, and nothing that runs is stopped: the balance goes below
zero while commits, detaches and releases go on.

Leases are charged when accepted: processes accepting leases at once
against one budget get exactly as many through as its hours hold, in
the current period and in a later one.

Under strict-two-level a root's budget covers its tree: processes
reserving and accepting leases in different children at once spend the
one balance on the tree's row exactly as processes of one project do.
"""

import datetime
import time
import uuid

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from cyquota.budgets import books
from cyquota.budgets import check
from cyquota.budgets import document
from cyquota.budgets import lease_charges
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import meter
from cyquota.db import models
from cyquota import exception
from cyquota.quota import QUOTAS
from tests import fixtures

WORKERS = 4
_USAGES = models.QuotaUsage.__table__
_TREES = models.TreeUsage.__table__
#: The children of root 'r' in the tree tests, one a worker.
CHILDREN = ['c%d' % n for n in range(WORKERS)]

_barrier = None


def _start_worker(url, barrier):
    """Runs first in each worker process: configure, point at ``url``."""
    global _barrier
    _barrier = barrier
    fixtures.start_worker(url)


worker_pools = fixtures.worker_pools(WORKERS, _start_worker)


def _now_s():
    return meter.seconds(timeutils.utcnow())


def _ready():
    _barrier.wait(timeout=120)


def _reserving(project, until):
    """Once every worker is ready, reserve one FPGA for ``project`` again
    and again until ``until`` (Unix seconds): ``[(second before, second
    after, uuids or None where refused)]``."""
    ctx = cyquota_context.get_admin_context()
    _barrier.wait(timeout=60)
    tried = []
    while time.time() < until:
        before = _now_s()
        try:
            got = QUOTAS.reserve(ctx, project, {'FPGA': 1})
        except exception.BudgetExhausted as refused:
            assert refused.kwargs['balance_hours'] <= 0
            got = None
        tried.append((before, _now_s(), got))
    return tried


def _committing(project, uuids):
    """Once every worker is ready, commit ``uuids`` one by one."""
    ctx = cyquota_context.get_admin_context()
    _barrier.wait(timeout=60)
    for uuid in uuids:
        QUOTAS.commit(ctx, project, [uuid])


@pytest.fixture
def at_once(db_url, worker_pools):
    """``at_once(function, args_of_worker_0, ...)``: ``function`` in every
    worker at once (they meet at a barrier); returns what each returned."""
    pool = worker_pools.of(db_url)
    # Spawned and started before any test's clock runs.
    for waiting in [pool.apply_async(_ready) for _ in range(WORKERS)]:
        waiting.get(timeout=300)

    def run(function, *per_worker):
        pending = [pool.apply_async(function, args) for args in per_worker]
        return [waiting.get(timeout=300) for waiting in pending]
    return run


def _the_row(table, holder, resource):
    """The row of ``table`` (the usage rows, or the trees') of ``holder``
    (a project, or a tree's root) and ``resource``."""
    key = table.c.root_id if table is _TREES else table.c.project_id
    return sa.and_(key == holder, table.c.resource == resource)


def _set_balance(project, resource, balance, table=_USAGES):
    """Give the row a budget of ``balance`` unit-seconds left now;
    returns now (Unix seconds)."""
    now = timeutils.utcnow()
    with db_api.get_engine().begin() as conn:
        conn.execute(
            table.update().where(_the_row(table, project, resource))
            .values(budget_base=meter.at(table, meter.NOW) + balance),
            meter.binds(now))
    return meter.seconds(now)


def _row(project, resource, table=_USAGES):
    with db_api.get_engine().connect() as conn:
        return conn.execute(sa.select(table).where(
            _the_row(table, project, resource))).one()


def _balance(row, second):
    return row.budget_base - meter.value_at(
        row.metered, row.metered_at, row.used - row.leased, second)


def _uuids(tried):
    return [uuid for _before, _after, got in tried if got for uuid in got]


def test_a_balance_just_above_zero_lets_every_reserve_through(
        backend, ctx, at_once):
    # Nothing runs: reserves do not spend, so one unit-second left is
    # enough for every one of them; at zero, none gets through.
    QUOTAS.rollback(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    _set_balance('p1', 'FPGA', 1)
    tried = at_once(_reserving, *[('p1', time.time() + 1.5)] * WORKERS)
    passed = _uuids(sum(tried, []))
    assert passed and len(passed) == sum(len(each) for each in tried)
    assert _row('p1', 'FPGA').reserved == len(passed)

    _set_balance('p1', 'FPGA', 0)
    tried = at_once(_reserving, *[('p1', time.time() + 1)] * WORKERS)
    assert all(each for each in tried)
    assert _uuids(sum(tried, [])) == []
    row = _row('p1', 'FPGA')
    assert (row.reserved, row.used) == (len(passed), 0)
    # A detach is never refused by a budget.
    QUOTAS.commit(ctx, 'p1', passed[:2])
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': -1}))
    QUOTAS.release(ctx, 'p1', {'FPGA': 1})
    assert _row('p1', 'FPGA').used == 0


def test_a_balance_running_out_refuses_from_its_instant_on(
        backend, ctx, at_once):
    # Four FPGAs run, twelve unit-seconds left: three seconds from now
    # the balance is zero, and from that second on no reserve passes.
    held = 4
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': held}))
    start = _set_balance('p1', 'FPGA', 3 * held)
    out = start + 3
    tried = at_once(_reserving, *[('p1', out + 1.5)] * WORKERS)

    every = sum(tried, [])
    assert [(before, after, got) for before, after, got in every
            if got and before >= out or not got and after < out] == []
    passed = _uuids(every)
    assert passed and any(got is None for _b, _a, got in every)
    row = _row('p1', 'FPGA')
    assert (row.used, row.reserved) == (held, len(passed))
    assert _balance(row, _now_s()) <= 0

    # What runs goes on, and spends on: commits of every reserve that
    # passed (at once), a release, a detach.
    mine = [_uuids(each) for each in tried]
    at_once(_committing, *[('p1', uuids) for uuids in mine])
    QUOTAS.release(ctx, 'p1', {'FPGA': 1})
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': -1}))
    row = _row('p1', 'FPGA')
    assert (row.used, row.reserved) == (held + len(passed) - 2, 0)
    now_s = _now_s()
    assert _balance(row, now_s) < 0
    with pytest.raises(exception.BudgetExhausted) as refused:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    assert refused.value.kwargs['balance_hours'] < 0
    assert row.metered_at <= now_s  # never ahead of the clocks


def _accepting(project, count, start):
    """Once every worker is ready, accept ``count`` leases of one FPGA for
    the hour from ``start`` (now: None), as the lease engine charges
    them; how many were accepted."""
    ctx = cyquota_context.get_admin_context()
    _barrier.wait(timeout=60)
    accepted = 0
    for _ in range(count):
        begin = start or timeutils.utcnow()
        plan = lease_charges.Plan({'FPGA': 1}, begin,
                                  begin + datetime.timedelta(hours=1))
        try:
            with db_api.writer_connection(ctx) as conn:
                holdings = QUOTAS.lease_holdings(ctx, conn, project,
                                                 ['FPGA'])
                holdings.spend(str(uuid.uuid4()), None, plan, 'u1',
                               lease_charges.ACCEPTED)
                holdings.write()
        except exception.BudgetExhausted:
            continue
        accepted += 1
    return accepted


@pytest.mark.parametrize('when', ['now', 'next month'])
def test_leases_accepted_at_once_take_exactly_what_the_budget_holds(
        backend, ctx, at_once, when):
    # 10 FPGA-hours a month (the default period); four processes ask for
    # five leases of one FPGA-hour each.
    books.set_budget(ctx, 'p1', 'FPGA', 10.5)
    start = None
    if when == 'next month':
        start = datetime.datetime(2100, 1, 1)
    accepted = at_once(_accepting, *[('p1', 5, start)] * WORKERS)
    assert sum(accepted) == 10
    if start is None:  # Each charged from its own instant: <= 1 h.
        assert 9.99 < document.show(ctx, 'p1')['resources']['FPGA'][
            'charged_hours'] <= 10
    assert check.disagreements(ctx) == []


def _in_tree(function, *args):
    """``function(*args)`` in a worker, under strict-two-level."""
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    QUOTAS.reset()
    try:
        return function(*args)
    finally:
        CONF.clear_override('enforcement_model', 'quota')
        QUOTAS.reset()


@pytest.fixture
def tree(backend, ctx):
    """Root 'r' over CHILDREN, strict-two-level in this process too."""
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    QUOTAS.reset()
    QUOTAS.limits.set_project(ctx, 'r')
    for child in CHILDREN:
        QUOTAS.limits.set_project(ctx, child, parent_id='r')
    yield
    CONF.clear_override('enforcement_model', 'quota')
    QUOTAS.reset()


def test_children_reserving_at_once_spend_one_tree_balance(
        tree, ctx, at_once):
    # Each child runs one FPGA; the root's budget has twelve unit-seconds
    # left: from the second it reaches zero no child's reserve passes.
    for child in CHILDREN:
        QUOTAS.commit(ctx, child, QUOTAS.reserve(ctx, child, {'FPGA': 1}))
    books.set_budget(ctx, 'r', 'FPGA', 1, model=QUOTAS.limits.model)
    out = _set_balance('r', 'FPGA', 3 * WORKERS, _TREES) + 3
    tried = at_once(_in_tree, *[(_reserving, child, out + 1.5)
                                for child in CHILDREN])

    every = sum(tried, [])
    assert [(before, after, got) for before, after, got in every
            if got and before >= out or not got and after < out] == []
    passed = _uuids(every)
    assert passed and any(got is None for _b, _a, got in every)
    row = _row('r', 'FPGA', _TREES)
    assert (row.used, row.reserved) == (WORKERS, len(passed))
    assert _balance(row, _now_s()) <= 0


def test_children_accepting_leases_at_once_take_what_the_tree_holds(
        tree, ctx, at_once):
    # 10 FPGA-hours a month for the tree; each child asks for five
    # leases of one FPGA-hour.
    books.set_budget(ctx, 'r', 'FPGA', 10.5, model=QUOTAS.limits.model)
    accepted = at_once(_in_tree, *[(_accepting, child, 5, None)
                                   for child in CHILDREN])
    assert sum(accepted) == 10
    assert 9.99 < document.show(ctx, 'r')['resources']['FPGA'][
        'charged_hours'] <= 10
    assert check.disagreements(ctx) == []
