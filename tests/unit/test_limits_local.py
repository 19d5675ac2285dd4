"""The local store's API (what the REST limit endpoints call): bad input is
a specific 400 and changes nothing; the flat model judges no hierarchy."""

import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota import quota

R = 'FPGA'


@pytest.fixture(params=['flat', 'strict-two-level'])
def store(request, sqlite_db):
    CONF.set_override('enforcement_model', request.param, 'quota')
    quota.QUOTAS.reset()
    return quota.QUOTAS.limits


@pytest.mark.parametrize('call, args, error', [
    ('set_project_limit', ('bad id', R, 1), exception.InvalidProjectId),
    ('set_project_limit', ('p1', 'NOPE', 1), exception.UnknownResource),
    ('set_project_limit', ('p1', R, -2), exception.InvalidLimit),
    ('set_project_limit', ('p1', R, 2 ** 31), exception.InvalidLimit),
    ('set_project_limit', ('p1', R, '3'), exception.InvalidLimit),
    ('set_project_limit', ('p1', R, True), exception.InvalidLimit),
    ('set_registered_limit', ('NOPE', 1), exception.UnknownResource),
    ('set_registered_limit', (R, 1.5), exception.InvalidLimit),
    ('delete_project_limit', ('p1', R), exception.NotFound),
    ('set_project', ('',), exception.InvalidProjectId),
    ('source.get_project', ('p1',), exception.ProjectNotFound),
])
def test_bad_input_is_specific_and_changes_nothing(store, ctx, call, args,
                                                   error):
    target = store
    for name in call.split('.'):
        target = getattr(target, name)
    with pytest.raises(error):
        target(ctx, *args)
    assert store.list_project_limits(ctx) == []
    assert store.source.list_registered_limits(ctx) == {}
    with pytest.raises(exception.ProjectNotFound):
        store.source.get_project(ctx, 'p1')


def test_limits_are_listed_keystone_shaped(store, ctx):
    store.set_registered_limit(ctx, R, 10)
    store.set_registered_limit(ctx, 'GPU', -1)
    store.set_project_limit(ctx, 'p2', R, 0)
    store.set_project_limit(ctx, 'p1', 'GPU', 4)
    store.set_project_limit(ctx, 'p1', 'GPU', 5)
    assert store.source.list_registered_limits(ctx) == {R: 10, 'GPU': -1}
    assert store.list_project_limits(ctx) == [
        dict(project_id='p1', resource='GPU', resource_limit=5),
        dict(project_id='p2', resource=R, resource_limit=0)]
    assert store.list_project_limits(ctx, 'p2') == [
        dict(project_id='p2', resource=R, resource_limit=0)]
    assert quota.QUOTAS.get_project_usage(ctx, 'p2')[R]['limit'] == 0


def test_parent_and_children(store, ctx):
    store.set_project(ctx, 'A', name='alpha')
    store.set_project(ctx, 'C', parent_id='A')
    store.set_project(ctx, 'B', parent_id='A')
    assert store.get_children(ctx, 'A') == ['B', 'C']
    assert store.get_parent(ctx, 'B') == 'A'
    assert store.get_parent(ctx, 'A') is None
    assert store.source.get_project(ctx, 'A') == dict(
        id='A', parent_id=None, name='alpha')


def test_flat_judges_no_hierarchy(sqlite_db, ctx):
    store = quota.QUOTAS.limits
    assert quota.QUOTAS.ledger.model.name == 'flat'
    store.set_project(ctx, 'A')
    store.set_project(ctx, 'B', parent_id='A')
    store.set_project(ctx, 'G', parent_id='B')     # deeper than two
    store.set_project_limit(ctx, 'A', R, 1)
    store.set_project_limit(ctx, 'B', R, 50)       # above its parent
    quota.QUOTAS.reserve(ctx, 'B', {R: 50})
    assert 'tree' not in quota.QUOTAS.get_project_usage(ctx, 'B')[R]


def test_strict_refuses_to_enforce_a_deeper_tree(sqlite_db, ctx):
    # A tree made deeper under flat is not silently half-enforced.
    store = quota.QUOTAS.limits
    store.set_project(ctx, 'A')
    store.set_project(ctx, 'B', parent_id='A')
    store.set_project(ctx, 'G', parent_id='B')
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    quota.QUOTAS.reset()
    with pytest.raises(exception.HierarchyTooDeep):
        quota.QUOTAS.reserve(ctx, 'G', {R: 1})
    quota.QUOTAS.reserve(ctx, 'B', {R: 1})
