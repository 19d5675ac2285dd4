"""Every diagram of seed 002 (the strict-two-level model), replayed in order
on the local limit source.

The seed's resource is ``cores`` with a registered default of 10; FPGA
plays it here. A green label in the seed is an allowed step, a red one a
refused step; the labels' ``l`` and ``u`` are checked after every step.
"""

import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota import quota
from tests import fixtures

R = 'FPGA'


class Seed002:
    """The seed's vocabulary on cyquota's APIs."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.store = quota.QUOTAS.limits

    def project(self, name, parent=None):
        self.store.set_project(self.ctx, name, parent_id=parent, name=name)

    def limit(self, name, value):
        self.store.set_project_limit(self.ctx, name, R, value)

    def claim(self, name, amount):
        """Reserve and commit: the seed's usage is used quota."""
        uuids = quota.QUOTAS.reserve(self.ctx, name, {R: amount})
        quota.QUOTAS.commit(self.ctx, name, uuids)

    def refused_claim(self, name, amount):
        """The claim is refused; returns the ``overs`` entries."""
        with pytest.raises(exception.OverQuota) as caught:
            quota.QUOTAS.reserve(self.ctx, name, {R: amount})
        return caught.value.overs

    def release(self, name, amount):
        quota.QUOTAS.release(self.ctx, name, {R: amount})

    def usage(self, name):
        return quota.QUOTAS.get_project_usage(self.ctx, name)[R]

    def assert_labels(self, **labels):
        """``A=(l, u)``: each project's limit and usage as the seed labels
        it (``l`` None: the label shows no limit)."""
        for name, (limit, used) in labels.items():
            usage = self.usage(name)
            assert usage['used'] == used, name
            assert usage['reserved'] == 0, name
            if limit is not None:
                assert usage['limit'] == limit, name

    def tree_used(self, root):
        return self.usage(root)['tree']['used']


@pytest.fixture
def seed(sqlite_db, ctx):
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    quota.QUOTAS.reset()
    quota.QUOTAS.limits.set_registered_limit(ctx, R, 10)
    return Seed002(ctx)


def _tree_over(overs, root, limit, used, requested):
    assert overs == [dict(project_id=root, resource=R, scope='tree',
                          limit=limit, used=used, reserved=0,
                          requested=requested)]


def test_every_diagram_in_order(seed, ctx):
    # 1. A (l=20, u=4) with children B and C (u=0).
    seed.project('A')
    seed.limit('A', 20)
    seed.project('B', parent='A')
    seed.project('C', parent='A')
    seed.claim('A', 4)
    seed.assert_labels(A=(20, 4), B=(10, 0), C=(10, 0))

    # 2. Green: B and C can each use up to 8.
    seed.claim('B', 8)
    seed.claim('C', 8)
    seed.assert_labels(A=(20, 4), B=(10, 8), C=(10, 8))
    assert seed.tree_used('A') == 20

    # 3. Red: A claims 2 more; the tree already uses A's limit of 20.
    _tree_over(seed.refused_claim('A', 2), 'A', 20, 20, 2)
    seed.assert_labels(A=(20, 4), B=(10, 8), C=(10, 8))

    # 4. Green: a child can still be added to a full tree.
    seed.project('D', parent='A')
    seed.assert_labels(A=(20, 4), B=(10, 8), C=(10, 8), D=(10, 0))

    # 5. Red: D cannot claim any of the tree's full usage.
    _tree_over(seed.refused_claim('D', 2), 'A', 20, 20, 2)
    seed.assert_labels(D=(10, 0))

    # 6. Red: a grandchild of A (D under C) is refused.
    with pytest.raises(exception.HierarchyTooDeep):
        seed.project('D', parent='C')
    assert seed.store.source.get_project(ctx, 'D')['parent_id'] == 'A'

    # 7. Green: B gets a project limit of 12 (not above A's 20).
    seed.limit('B', 12)
    seed.assert_labels(A=(20, 4), B=(12, 8), C=(10, 8))
    # ... yet the tree is still full.
    _tree_over(seed.refused_claim('B', 1), 'A', 20, 20, 1)

    # 8. Green: A and C release 2 each.
    seed.release('A', 2)
    seed.release('C', 2)
    seed.assert_labels(A=(20, 2), B=(12, 8), C=(10, 6))

    # 9. Green: B claims what was released, up to its own 12.
    seed.claim('B', 4)
    seed.assert_labels(A=(20, 2), B=(12, 12), C=(10, 6))

    # 10. Red: C is under its default of 10 but the tree is full again.
    _tree_over(seed.refused_claim('C', 2), 'A', 20, 20, 2)
    seed.assert_labels(A=(20, 2), B=(12, 12), C=(10, 6))

    # 11. Red (a fresh tree): B's limit of 30 is above A's 20.
    fixtures.clear_tables()
    seed.store.set_registered_limit(ctx, R, 10)
    seed.project('A')
    seed.limit('A', 20)
    seed.project('B', parent='A')
    seed.project('C', parent='A')
    with pytest.raises(exception.LimitHierarchyConflict):
        seed.limit('B', 30)
    seed.assert_labels(A=(20, 0), B=(10, 0), C=(10, 0))

    # 12. Red: so is a new child D's limit of 30.
    seed.project('D', parent='A')
    with pytest.raises(exception.LimitHierarchyConflict):
        seed.limit('D', 30)
    seed.assert_labels(D=(10, 0))
    assert seed.store.list_project_limits(ctx) == [
        dict(project_id='A', resource=R, resource_limit=20)]

    # 13. Green (a fresh tree): A with a limit of 6, below the default 10.
    fixtures.clear_tables()
    seed.store.set_registered_limit(ctx, R, 10)
    seed.project('A')
    seed.limit('A', 6)
    seed.assert_labels(A=(6, 0))

    # 14. Green: child B does not assume the default 10 but A's 6.
    seed.project('B', parent='A')
    seed.assert_labels(A=(6, 0), B=(6, 0))

    # 15. Green: and so for every further child.
    seed.project('C', parent='A')
    seed.project('D', parent='A')
    seed.assert_labels(A=(6, 0), B=(6, 0), C=(6, 0), D=(6, 0))

    # 16. The show_hierarchy example: ram_mb with a default of 2560; D has
    # no limit of its own and gets the default.
    fixtures.clear_tables()
    seed.store.set_registered_limit(ctx, R, 2560)
    seed.project('A')
    seed.limit('A', 20480)
    for name, value in (('B', 10240), ('C', 5120), ('D', None)):
        seed.project(name, parent='A')
        if value is not None:
            seed.limit(name, value)
    seed.assert_labels(A=(20480, 0), B=(10240, 0), C=(5120, 0),
                       D=(2560, 0))


def test_optimised_usage_calculation(seed, ctx):
    # Future work, "aggregate usage": A with children B and C. A claim in C
    # bubbles up to A's aggregate, and the next claim only reads that.
    seed.project('A')
    seed.project('B', parent='A')
    seed.project('C', parent='A')
    seed.claim('C', 2)
    assert seed.tree_used('A') == 2
    seed.claim('B', 2)
    assert seed.tree_used('A') == 4

    # The deeper example (D and E under B) is three levels: refused here.
    with pytest.raises(exception.HierarchyTooDeep):
        seed.project('D', parent='B')

    # Its claims on a two-level tree, every limit 10: D 4, C 6, then E's 2
    # fails because A's aggregate is at A's limit.
    fixtures.clear_tables()
    seed.store.set_registered_limit(ctx, R, 10)
    seed.project('A')
    for name in 'BCDE':
        seed.project(name, parent='A')
    seed.claim('D', 4)
    assert seed.tree_used('A') == 4
    seed.claim('C', 6)
    assert seed.tree_used('A') == 10
    _tree_over(seed.refused_claim('E', 2), 'A', 10, 10, 2)
