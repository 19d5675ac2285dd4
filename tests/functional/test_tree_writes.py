"""Concurrent writes to the local store under strict-two-level, on
PostgreSQL and MariaDB: two writes that each fit alone never together
break a tree (a child limit above its parent's, or a child's usage counted
in the wrong tree)."""

import multiprocessing

from cyquota.conf import CONF
from cyquota import context
from cyquota import exception
from cyquota import quota
from cyquota.quota.limits import tree_usage
from tests import fixtures

ROUNDS = 15
R = 'FPGA'


def _strict(url):
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    fixtures.use_database(url, migrate=False)


def _worker(url, role, barrier, results):
    """Each round, at the barrier, do this role's write."""
    CONF([], project='cyquota', default_config_files=[])
    _strict(url)
    ctx = context.get_admin_context()
    store = quota.QUOTAS.limits
    writes = {
        'lower parent': lambda n: store.set_project_limit(ctx, 'A%d' % n, R,
                                                          5),
        'raise child': lambda n: store.set_project_limit(ctx, 'B%d' % n, R,
                                                         40),
        'join': lambda n: store.set_project(ctx, 'P%d' % n,
                                            parent_id='A%d' % n),
        'reserve': lambda n: quota.QUOTAS.reserve(ctx, 'P%d' % n, {R: 2}),
    }
    outcomes = []
    for n in range(ROUNDS):
        barrier.wait(timeout=120)
        try:
            writes[role](n)
            outcomes.append('done')
        except exception.Conflict as error:
            outcomes.append(type(error).__name__)
    results.put((role, outcomes))


def _race(db_url, roles):
    spawn = multiprocessing.get_context('spawn')
    barrier = spawn.Barrier(len(roles))
    results = spawn.Queue()
    workers = [spawn.Process(target=_worker,
                             args=(db_url, role, barrier, results))
               for role in roles]
    for process in workers:
        process.start()
    outcomes = dict(results.get(timeout=300) for _ in workers)
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    return outcomes


def test_parent_lowered_while_child_raised(backend, db_url, ctx):
    _strict(db_url)
    store = quota.QUOTAS.limits
    for n in range(ROUNDS):
        store.set_project(ctx, 'A%d' % n)
        store.set_project_limit(ctx, 'A%d' % n, R, 50)
        store.set_project(ctx, 'B%d' % n, parent_id='A%d' % n)
        store.set_project_limit(ctx, 'B%d' % n, R, 3)
    outcomes = _race(db_url, ['lower parent', 'raise child'])
    for n in range(ROUNDS):
        pair = (outcomes['lower parent'][n], outcomes['raise child'][n])
        # Whichever came second was refused; both fitting alone.
        assert sorted(pair) == ['LimitHierarchyConflict', 'done']
        limits = {row['project_id']: row['resource_limit'] for row in
                  store.list_project_limits(ctx)
                  if row['project_id'] in ('A%d' % n, 'B%d' % n)}
        assert limits['B%d' % n] <= limits['A%d' % n]


def test_first_use_while_joining_a_tree(backend, db_url, ctx):
    _strict(db_url)
    store = quota.QUOTAS.limits
    for n in range(ROUNDS):
        store.set_project(ctx, 'A%d' % n)
    outcomes = _race(db_url, ['join', 'reserve'])
    assert outcomes['reserve'] == ['done'] * ROUNDS
    for n in range(ROUNDS):
        parent = store.source.get_project(ctx, 'P%d' % n)['parent_id']
        # Either it joined before its first use, or it was already a root.
        assert outcomes['join'][n] == (
            'done' if parent == 'A%d' % n else 'ProjectParentConflict')
        root = parent or 'P%d' % n
        tree = quota.QUOTAS.get_project_usage(ctx, root)[R]['tree']
        assert tree['reserved'] == 2
    assert tree_usage.find_drift(ctx, store) == []
