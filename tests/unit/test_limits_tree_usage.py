"""Tree usages: made from the members when missing (a database that ran
under flat), and checked and repaired against the members
(repair)."""

import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import quota
from cyquota.quota.limits import tree_usage

R = 'FPGA'
_trees = models.TreeUsage.__table__


def strict():
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    quota.QUOTAS.reset()
    return quota.QUOTAS.limits


def tree_row(ctx, root, resource=R):
    with db_api.reader(ctx) as session:
        return session.execute(
            sa.select(_trees.c.used, _trees.c.reserved)
            .where(_trees.c.root_id == root,
                   _trees.c.resource == resource)).first()


@pytest.fixture
def flat_then_strict(sqlite_db, ctx):
    """A tree used under flat (no tree usages kept), then strict."""
    store = quota.QUOTAS.limits
    store.set_project(ctx, 'A')
    store.set_project(ctx, 'B', parent_id='A')
    store.set_project(ctx, 'C', parent_id='A')
    quota.QUOTAS.commit(ctx, 'B', quota.QUOTAS.reserve(ctx, 'B', {R: 3}))
    quota.QUOTAS.reserve(ctx, 'C', {R: 4})
    quota.QUOTAS.reserve(ctx, 'A', {R: 1})
    assert tree_row(ctx, 'A') is None
    return strict()


def test_missing_tree_usage_is_summed_from_the_members(flat_then_strict,
                                                       ctx):
    tree = quota.QUOTAS.get_project_usage(ctx, 'C')[R]['tree']
    assert (tree['used'], tree['reserved']) == (3, 5)
    flat_then_strict.set_project_limit(ctx, 'A', R, 10)
    quota.QUOTAS.reserve(ctx, 'C', {R: 2})
    assert tuple(tree_row(ctx, 'A')) == (3, 7)
    assert tree_usage.find_drift(ctx, flat_then_strict) == []


def test_drift_is_found_and_repaired(flat_then_strict, ctx):
    quota.QUOTAS.reserve(ctx, 'B', {R: 1})
    with db_api.writer(ctx) as session:
        session.execute(_trees.update().where(_trees.c.root_id == 'A')
                        .values(used=40))
    source = flat_then_strict
    drift = [tree_usage.TreeDrift('A', R, 'used', 40, 3)]
    assert tree_usage.find_drift(ctx, source) == drift
    assert tree_usage.find_drift(ctx, source, root_id='nobody') == []
    assert tree_usage.sync(ctx, source) == drift
    assert tree_usage.find_drift(ctx, source) == []
    assert tuple(tree_row(ctx, 'A')) == (3, 6)


def test_rows_of_a_project_that_is_no_longer_a_root_should_be_zero(
        sqlite_db, ctx):
    store = strict()
    store.set_project(ctx, 'A')
    quota.QUOTAS.rollback(ctx, 'P', quota.QUOTAS.reserve(ctx, 'P', {R: 1}))
    # P held nothing, but it was registered as a root by its reservation.
    with db_api.writer(ctx) as session:
        session.execute(models.Project.__table__.update()
                        .where(models.Project.__table__.c.id == 'P')
                        .values(parent_id='A'))
        session.execute(_trees.update().where(_trees.c.root_id == 'P',
                                              _trees.c.resource == R)
                        .values(reserved=2))
    assert tree_usage.find_drift(ctx, store) == [
        tree_usage.TreeDrift('P', R, 'reserved', 2, 0)]
