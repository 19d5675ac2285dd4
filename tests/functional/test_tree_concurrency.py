"""Strict-two-level under real concurrency, on PostgreSQL and MariaDB.

Eight processes reserve at once, each in its own child of one root, with a
tight root limit and a total demand far above it. The tree never goes past
the root's limit, it ends filled exactly to it (no request that fitted was
refused), and every refusal is an over-quota error on the tree, never a lock
timeout, deadlock or other database error.
"""

import multiprocessing
import random
import time

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota import quota
from tests import fixtures

WORKERS = 8
ROOT_LIMIT = 60
DEMAND_PER_WORKER = 20   # 160 wanted in all
R = 'FPGA'
ROOT = 'root'


def _strict(url):
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    fixtures.use_database(url, migrate=False)


def _worker(url, worker, start, results):
    CONF([], project='cyquota', default_config_files=[])
    _strict(url)
    ctx = context.get_admin_context()
    child = 'child%d' % worker
    rng = random.Random(worker)
    taken, refusals, errors = 0, [], []
    amount = None
    start.wait(timeout=120)
    while taken < DEMAND_PER_WORKER:
        amount = amount or rng.randint(1, 3)
        try:
            uuids = quota.QUOTAS.reserve(ctx, child, {R: amount})
            if rng.random() < 0.5:
                quota.QUOTAS.commit(ctx, child, uuids)
            taken += amount
            amount = None
        except exception.OverQuota as error:
            refusals.append(error.overs)
            if amount == 1:
                break
            amount = 1   # the tree may still have room for a smaller one
        except Exception as error:  # any other failure is what we look for
            errors.append(repr(error))
            break
    results.put((child, taken, refusals, errors))


def _tree_total(session, children):
    members = [ROOT] + children
    return session.execute(
        sa.select(sa.func.coalesce(sa.func.sum(
            models.QuotaUsage.used + models.QuotaUsage.reserved), 0))
        .where(models.QuotaUsage.project_id.in_(members))).scalar()


def test_tree_never_exceeds_root_limit_and_ends_full(backend, db_url,
                                                     worker_urls, ctx):
    _strict(db_url)
    store = quota.QUOTAS.limits
    store.set_project(ctx, ROOT)
    store.set_project_limit(ctx, ROOT, R, ROOT_LIMIT)
    children = ['child%d' % w for w in range(WORKERS)]
    for child in children:
        store.set_project(ctx, child, parent_id=ROOT)

    spawn = multiprocessing.get_context('spawn')
    # The workers go at once, when every one has imported and set up.
    start = spawn.Barrier(WORKERS)
    results = spawn.Queue()
    workers = [spawn.Process(target=_worker,
                             args=(worker_urls[w % len(worker_urls)], w,
                                   start, results))
               for w in range(WORKERS)]
    for process in workers:
        process.start()
    highest, outcomes = 0, []
    deadline = time.monotonic() + 300
    while len(outcomes) < WORKERS and time.monotonic() < deadline:
        with db_api.reader(ctx) as session:
            highest = max(highest, _tree_total(session, children))
        while not results.empty():
            outcomes.append(results.get())
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert len(outcomes) == WORKERS

    assert [errors for _, _, _, errors in outcomes] == [[]] * WORKERS
    assert highest <= ROOT_LIMIT
    for _child, _taken, refusals, _errors in outcomes:
        for overs in refusals:
            [over] = overs
            assert over['scope'] == 'tree' and over['project_id'] == ROOT
            assert over['used'] + over['reserved'] <= ROOT_LIMIT
            assert (over['used'] + over['reserved'] + over['requested']
                    > ROOT_LIMIT)
    assert sum(taken for _, taken, _, _ in outcomes) == ROOT_LIMIT
    usage = quota.QUOTAS.get_project_usage(ctx, ROOT)[R]['tree']
    assert usage['used'] + usage['reserved'] == ROOT_LIMIT
    with db_api.reader(ctx) as session:
        assert _tree_total(session, children) == ROOT_LIMIT
    for child, taken, _, _ in outcomes:
        counts = quota.QUOTAS.get_project_usage(ctx, child)[R]
        assert counts['used'] + counts['reserved'] == taken
