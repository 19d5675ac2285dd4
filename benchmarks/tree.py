"""Tree benchmark: strict-two-level reserve latency with
1, 100, 1,000 and 10,000 children under one root.

All four trees live in one throw-away database at once, so every
measurement sees the same table sizes and only the number of children
under the reserving project's root differs. Every child already uses one
FPGA. One process reserves one FPGA at a time through ``QUOTAS.reserve``
in a random child, one transaction each, the trees taking turns for
several rounds so that the machine's drift touches all alike. The target:
the latency does not grow with the children (10,000 within 1.5x of 1),
because the tree check reads the root's one ``tree_usages`` row.
"""

import contextlib
import random
import statistics
import time

import benchmarks
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import quota
from cyquota.quota.limits import tree_usage

TITLE = 'Tree: strict-two-level reserve latency by children under one root'
COLUMNS = [
    ('backend', 'backend', '{}'),
    ('children', 'children', '{}'),
    ('p50', 'p50 ms', '{:.2f}'),
    ('mean', 'mean ms', '{:.2f}'),
    ('p99', 'p99 ms', '{:.2f}'),
    ('ratio', 'p50 / p50 with 1 child', '{:.2f}'),
    ('check', 'tree usage after the run', '{}'),
]
CHILDREN = (1, 100, 1000, 10000)
#: The target of p50 with the most children over p50 with one child: the
#: tree check reads one aggregate row per root
#: (``doc/source/limits.rst``), so a reserve must not slow down as the tree
#: grows.
TARGET = 1.5
RESOURCE = 'FPGA'
ROOT_LIMIT = 2 ** 31 - 1


def run(args, progress):
    """Measure every backend in ``args.backends``."""
    reserves, rounds = (10, 2) if args.quick else (100, 5)
    rows = []
    for backend, url in benchmarks.databases('tree', args.backends, progress,
                                             _database):
        if url is None:
            rows.append(dict(benchmarks.UNREACHABLE, backend=backend))
            continue
        rows.extend(_measure(backend, reserves, rounds, progress))
    return rows


def summary(rows):
    """Lines under the table: the target, met or missed."""
    lines = ['target: p50 with %d children within %.1fx of 1 child'
             % (max(CHILDREN), TARGET)]
    for row in rows:
        if 'p50' not in row:
            lines.append('  %s: no measurement (%s)' % (
                row['backend'], row['check']))
        elif row['children'] == max(CHILDREN):
            lines.append('  %s: %.2fx, %s' % (
                row['backend'], row['ratio'],
                'target met' if row['ratio'] <= TARGET else 'MISSED'))
    return lines


def plot(rows, ax):
    """p50 latency against the number of children, one line a backend."""
    backends = []
    for row in rows:
        if 'p50' in row and row['backend'] not in backends:
            backends.append(row['backend'])
    for backend in backends:
        cells = [r for r in rows if r['backend'] == backend and 'p50' in r]
        line, = ax.plot([r['children'] for r in cells],
                        [r['p50'] for r in cells], marker='o',
                        label='%s p50' % backend)
        ax.axhline(cells[0]['p50'] * TARGET, color=line.get_color(),
                   linestyle=':', linewidth=1)
    ax.set_xscale('log')
    ax.set_xticks(CHILDREN, [str(n) for n in CHILDREN])
    ax.set_ylim(bottom=0)
    ax.set_xlabel('children under the root (dotted: %.1fx the 1-child '
                  'p50)' % TARGET)
    ax.set_ylabel('reserve latency, ms')
    ax.legend()


@contextlib.contextmanager
def _database(backend):
    """A throw-away database under strict-two-level, or None when the
    server cannot be reached."""
    with benchmarks.throwaway_database(backend) as url:
        CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
        quota.QUOTAS.reset()
        try:
            yield url
        finally:
            CONF.clear_override('enforcement_model', 'quota')
            quota.QUOTAS.reset()


def _build_trees():
    """The trees, each child using one FPGA, in bulk; returns
    ``{children: [child ids]}``."""
    now = models.utcnow()
    trees = {}
    with db_api.get_engine().begin() as conn:
        for count in CHILDREN:
            root = 'root-%d' % count
            children = ['c%d-%d' % (count, i) for i in range(count)]
            conn.execute(models.Project.__table__.insert(), [
                dict(id=root, parent_id=None, created_at=now)] + [
                dict(id=child, parent_id=root, created_at=now)
                for child in children])
            conn.execute(models.ProjectLimit.__table__.insert(), [dict(
                project_id=root, resource=RESOURCE,
                resource_limit=ROOT_LIMIT, created_at=now)])
            conn.execute(models.QuotaUsage.__table__.insert(), [
                dict(project_id=child, resource=RESOURCE, used=1, reserved=0,
                     created_at=now) for child in children])
            trees[count] = children
    return trees


def _measure(backend, reserves, rounds, progress):
    ctx = cyquota_context.get_admin_context()
    progress.step('tree: %s: building trees of %s children' % (
        backend, ', '.join(map(str, CHILDREN))))
    trees = _build_trees()
    rng = random.Random(0)
    made = {count: 0 for count in CHILDREN}
    # Untimed: the first reserve of a tree sums its children once.
    for count, children in trees.items():
        quota.QUOTAS.reserve(ctx, rng.choice(children), {RESOURCE: 1})
        made[count] += 1
    timings = {count: [] for count in CHILDREN}
    for turn in range(rounds):
        progress.step('tree: %s: round %d of %d' % (backend, turn + 1,
                                                    rounds))
        for count, children in trees.items():
            for _ in range(reserves):
                child = rng.choice(children)
                start = time.perf_counter()
                quota.QUOTAS.reserve(ctx, child, {RESOURCE: 1})
                timings[count].append((time.perf_counter() - start) * 1000)
                made[count] += 1
    problems = _check(ctx, made)
    rows = []
    for count in CHILDREN:
        times = sorted(timings[count])
        rows.append(dict(
            backend=backend, children=count, p50=statistics.median(times),
            mean=statistics.fmean(times),
            p99=times[min(len(times) - 1, int(len(times) * 0.99))],
            check=problems.get(count, 'ok'), failed=count in problems))
    for row in rows:
        row['ratio'] = row['p50'] / rows[0]['p50']
    return rows


def _check(ctx, made):
    """``{children: problem}``: each root's tree usage must hold its
    children's used FPGA and every reservation made, and agree with the sum
    of its members' rows."""
    source = quota.QUOTAS.limits
    problems = {}
    for count in CHILDREN:
        root = 'root-%d' % count
        tree = quota.QUOTAS.get_project_usage(ctx, root)[RESOURCE]['tree']
        drift = tree_usage.find_drift(ctx, source, root)
        if (tree['used'], tree['reserved']) != (count, made[count]) or drift:
            problems[count] = 'used %d reserved %d, %d drifting' % (
                tree['used'], tree['reserved'], len(drift))
    return problems
