"""The strict-two-level model on the local store: limits, the write rules
and the tree check, with -1 (unlimited) and 0 (zero) at every level."""

import datetime

from oslo_utils import timeutils
import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota import quota
from cyquota.quota.limits import strict_two_level

R = 'FPGA'


@pytest.fixture
def store(sqlite_db, ctx):
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    quota.QUOTAS.reset()
    return quota.QUOTAS.limits


def tree(store, ctx, root, *children, limits=None):
    store.set_project(ctx, root)
    for child in children:
        store.set_project(ctx, child, parent_id=root)
    for project, value in (limits or {}).items():
        store.set_project_limit(ctx, project, R, value)


def usage(ctx, project):
    return quota.QUOTAS.get_project_usage(ctx, project)[R]


@pytest.mark.parametrize('first, second, stricter', [
    (5, 7, 5), (7, 5, 5), (-1, 5, 5), (5, -1, 5), (-1, -1, -1), (0, -1, 0),
    (-1, 0, 0), (0, 3, 0)])
def test_lower_treats_minus_one_as_unlimited(first, second, stricter):
    assert strict_two_level.lower(first, second) == stricter


@pytest.mark.parametrize('limit, ceiling, fits', [
    (5, 5, True), (6, 5, False), (-1, -1, True), (5, -1, True),
    (-1, 5, False), (0, 0, True), (1, 0, False), (-1, 0, False)])
def test_fits_treats_minus_one_as_unlimited(limit, ceiling, fits):
    assert strict_two_level.fits(limit, ceiling) is fits


def test_model_is_chosen_by_config(store):
    assert quota.QUOTAS.ledger.model.name == 'strict-two-level'
    assert store.model is quota.QUOTAS.ledger.model


def test_child_default_is_the_lower_of_default_and_parent(store, ctx):
    store.set_registered_limit(ctx, R, 10)
    tree(store, ctx, 'A', 'B', limits={'A': 6})
    assert usage(ctx, 'B')['limit'] == 6
    store.set_project_limit(ctx, 'A', R, 20)
    assert usage(ctx, 'B')['limit'] == 10


@pytest.mark.parametrize('parent, child, allowed', [
    (20, 20, True), (20, 21, False), (20, -1, False), (-1, 1000, True),
    (-1, -1, True), (0, 0, True), (0, 1, False), (0, -1, False)])
def test_child_limit_above_parent_is_refused(store, ctx, parent, child,
                                             allowed):
    tree(store, ctx, 'A', 'B', limits={'A': parent})
    if allowed:
        store.set_project_limit(ctx, 'B', R, child)
        assert usage(ctx, 'B')['limit'] == child
    else:
        with pytest.raises(exception.LimitHierarchyConflict):
            store.set_project_limit(ctx, 'B', R, child)
        assert store.list_project_limits(ctx, 'B') == []


def test_child_limit_is_judged_against_a_parent_default(store, ctx):
    # The parent has no limit of its own: the registered default is its
    # limit, and with no registered limit, [quota] default_limit.
    tree(store, ctx, 'A', 'B')
    store.set_project_limit(ctx, 'B', R, 1000)   # default_limit -1
    store.set_registered_limit(ctx, R, 10)
    with pytest.raises(exception.LimitHierarchyConflict):
        store.set_project_limit(ctx, 'B', R, 11)
    store.set_project_limit(ctx, 'B', R, 10)


@pytest.mark.parametrize('child, parent, allowed', [
    (8, 8, True), (8, 7, False), (-1, 100, False), (-1, -1, True),
    (0, 0, True), (3, 0, False)])
def test_parent_limit_below_a_child_is_refused(store, ctx, child, parent,
                                               allowed):
    tree(store, ctx, 'A', 'B', 'C', limits={'B': 0, 'C': child})
    if allowed:
        store.set_project_limit(ctx, 'A', R, parent)
        assert usage(ctx, 'A')['limit'] == parent
    else:
        with pytest.raises(exception.LimitHierarchyConflict) as caught:
            store.set_project_limit(ctx, 'A', R, parent)
        assert 'child C' in str(caught.value)
        assert usage(ctx, 'A')['limit'] == -1


def test_deleting_a_root_limit_below_a_child_is_refused(store, ctx):
    store.set_registered_limit(ctx, R, 10)
    tree(store, ctx, 'A', 'B', limits={'A': 20, 'B': 15})
    with pytest.raises(exception.LimitHierarchyConflict):
        store.delete_project_limit(ctx, 'A', R)
    assert usage(ctx, 'A')['limit'] == 20
    store.delete_project_limit(ctx, 'B', R)
    store.delete_project_limit(ctx, 'A', R)
    assert usage(ctx, 'A')['limit'] == 10


def test_sum_of_children_limits_may_exceed_the_parent(store, ctx):
    tree(store, ctx, 'A', 'B', 'C', 'D', limits={'A': 10, 'B': 10, 'C': 10,
                                                 'D': 10})
    assert [usage(ctx, p)['limit'] for p in 'ABCD'] == [10] * 4


def test_grandchild_is_refused(store, ctx):
    tree(store, ctx, 'A', 'B')
    with pytest.raises(exception.HierarchyTooDeep):
        store.set_project(ctx, 'G', parent_id='B')
    with pytest.raises(exception.ProjectNotFound):
        store.source.get_project(ctx, 'G')


def test_parent_is_fixed_once_registered(store, ctx):
    tree(store, ctx, 'A', 'B')
    store.set_project(ctx, 'X')
    with pytest.raises(exception.ProjectParentConflict):
        store.set_project(ctx, 'B', parent_id='X')
    with pytest.raises(exception.ProjectParentConflict):
        store.set_project(ctx, 'X', parent_id='A')
    assert store.set_project(ctx, 'B', parent_id='A', name='bee') == dict(
        id='B', parent_id='A', name='bee')
    assert store.source.get_project(ctx, 'B')['name'] == 'bee'


def test_a_project_joins_a_tree_before_its_first_use(store, ctx):
    # A reservation registers an unknown project as a root...
    store.set_project(ctx, 'A')
    quota.QUOTAS.reserve(ctx, 'P', {R: 1})
    assert store.source.get_project(ctx, 'P')['parent_id'] is None
    with pytest.raises(exception.ProjectParentConflict):
        store.set_project(ctx, 'P', parent_id='A')
    # ... and a failed one does not.
    store.set_registered_limit(ctx, R, 0)
    with pytest.raises(exception.OverQuota):
        quota.QUOTAS.reserve(ctx, 'Q', {R: 1})
    with pytest.raises(exception.ProjectNotFound):
        store.source.get_project(ctx, 'Q')


def test_joining_needs_own_limits_within_the_parent(store, ctx):
    tree(store, ctx, 'A', limits={'A': 5})
    store.set_project_limit(ctx, 'P', R, 6)   # registers P as a root
    with pytest.raises(exception.ProjectParentConflict):
        store.set_project(ctx, 'P', parent_id='A')


@pytest.mark.parametrize('parent_id, error', [
    ('nope', exception.InvalidParent), ('bad id!', exception.InvalidParent),
    ('A', None), (7, exception.InvalidParent)])
def test_bad_parent_is_a_400_naming_it(store, ctx, parent_id, error):
    store.set_project(ctx, 'A')
    if error is None:
        with pytest.raises(exception.InvalidParent) as caught:
            store.set_project(ctx, 'A', parent_id='A')
    else:
        with pytest.raises(error) as caught:
            store.set_project(ctx, 'P', parent_id=parent_id)
    assert caught.value.code == 400
    assert 'parent_id' in str(caught.value)


@pytest.mark.parametrize('name', ['', 'x' * 256, 5])
def test_bad_name_changes_nothing(store, ctx, name):
    with pytest.raises(exception.Invalid) as caught:
        store.set_project(ctx, 'A', name=name)
    assert 'name' in str(caught.value)
    with pytest.raises(exception.ProjectNotFound):
        store.source.get_project(ctx, 'A')


@pytest.mark.parametrize('root, child, root_used, asked, scopes', [
    (-1, None, 0, 10 ** 6, []),
    (-1, -1, 0, 10 ** 6, []),
    (-1, 3, 0, 4, ['project']),
    (-1, 0, 5, 1, ['project']),
    (3, None, 2, 2, ['tree']),
    (0, None, 0, 1, ['project', 'tree']),
    (0, 0, 0, 1, ['project', 'tree'])])
def test_unlimited_and_zero_at_every_level(store, ctx, root, child,
                                           root_used, asked, scopes):
    tree(store, ctx, 'A', 'B', limits={'A': root})
    if child is not None:
        store.set_project_limit(ctx, 'B', R, child)
    if root_used:
        quota.QUOTAS.reserve(ctx, 'A', {R: root_used})
    if not scopes:
        quota.QUOTAS.reserve(ctx, 'B', {R: asked})
        assert usage(ctx, 'A')['tree']['reserved'] == asked
        return
    with pytest.raises(exception.OverQuota) as caught:
        quota.QUOTAS.reserve(ctx, 'B', {R: asked})
    assert sorted(o['scope'] for o in caught.value.overs) == scopes
    assert usage(ctx, 'B')['reserved'] == 0


def test_over_quota_names_project_and_tree(store, ctx):
    tree(store, ctx, 'A', 'B', limits={'A': 10, 'B': 4})
    quota.QUOTAS.reserve(ctx, 'A', {R: 5})
    quota.QUOTAS.reserve(ctx, 'B', {R: 3})
    with pytest.raises(exception.OverQuota) as caught:
        quota.QUOTAS.reserve(ctx, 'B', {R: 3})
    assert caught.value.overs == [
        dict(project_id='B', resource=R, scope='project', limit=4, used=0,
             reserved=3, requested=3),
        dict(project_id='A', resource=R, scope='tree', limit=10, used=0,
             reserved=8, requested=3)]
    assert caught.value.code == 403


def test_usage_report_shows_the_tree(store, ctx):
    tree(store, ctx, 'A', 'B', limits={'A': 10})
    uuids = quota.QUOTAS.reserve(ctx, 'B', {R: 3})
    quota.QUOTAS.commit(ctx, 'B', uuids)
    quota.QUOTAS.reserve(ctx, 'A', {R: 2})
    assert usage(ctx, 'B') == dict(
        limit=10, used=3, reserved=0, leased=0, promised=0, available=7,
        tree=dict(root_id='A', limit=10, used=3, reserved=2, leased=0,
                  promised=0, available=5))


def test_tree_usage_follows_every_ledger_operation(store, ctx,
                                                   monkeypatch):
    tree(store, ctx, 'A', 'B', 'C', limits={'A': 100})
    held = quota.QUOTAS.reserve(ctx, 'B', {R: 5, 'GPU': 1})
    quota.QUOTAS.reserve(ctx, 'C', {R: 7}, expire=60)
    quota.QUOTAS.commit(ctx, 'B', held)
    quota.QUOTAS.release(ctx, 'B', {R: 2})
    rolled = quota.QUOTAS.reserve(ctx, 'A', {R: 4})
    quota.QUOTAS.rollback(ctx, 'A', rolled)
    assert usage(ctx, 'A')['tree'] == dict(root_id='A', limit=100, used=3,
                                           reserved=7, leased=0, promised=0,
                                           available=90)
    later = timeutils.utcnow() + datetime.timedelta(seconds=61)
    monkeypatch.setattr(timeutils, 'utcnow', lambda: later)
    assert quota.QUOTAS.expire(ctx) == 1
    assert usage(ctx, 'C')['tree'] == dict(root_id='A', limit=100, used=3,
                                           reserved=0, leased=0, promised=0,
                                           available=97)
    assert quota.QUOTAS.get_project_usage(ctx, 'C')['GPU']['tree'][
        'used'] == 1
