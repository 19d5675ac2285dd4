"""How much an allocation-candidate search may cost: many numbered groups
over single-unit devices combine into very many candidates, which the
search must neither enumerate to answer ``limit=1`` nor return without a
cap; too many groups are refused before any search."""

import time

import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota.placement import candidates
from cyquota.placement import request

DEVICES = 9


def _devices(tree, count=DEVICES):
    tree.provider('cn')
    for index in range(count):
        tree.provider('dev%d' % index, parent='cn',
                      inventory={'FPGA': {'total': 1}})


def _groups(count, **extra):
    params = {'resources%d' % index: 'FPGA:1'
              for index in range(1, count + 1)}
    params['group_policy'] = 'none'
    params.update(extra)
    return params


def _found(tree, params):
    return candidates.search(tree.ctx, request.from_params(params))[
        'allocation_requests']


def _seconds(tree, params):
    start = time.perf_counter()
    found = _found(tree, params)
    return time.perf_counter() - start, found


def test_many_groups_with_a_limit_cost_about_one_group(tree):
    _devices(tree)
    # Warm the caches and the pool: the first search pays for them.
    _found(tree, _groups(1, limit='1'))
    benign, one = _seconds(tree, _groups(1, limit='1'))
    hostile, first = _seconds(tree, _groups(8, limit='1'))
    assert len(one) == len(first) == 1
    # The first candidate puts group N on the Nth device.
    assert sorted(first[0]['mappings']) == [str(i) for i in range(1, 9)]
    assert len({ids[0] for ids in first[0]['mappings'].values()}) == 8
    # Four statements either way; the combination is a few steps more.
    assert hostile < 20 * benign, (hostile, benign)


def test_many_groups_stop_at_max_allocation_candidates(tree):
    _devices(tree)
    _found(tree, _groups(1))
    benign, every_device = _seconds(tree, _groups(1))
    hostile, found = _seconds(tree, _groups(8))
    assert len(every_device) == DEVICES
    # 9!/1! ways to seat 8 groups on 9 devices: the default cap's worth.
    assert len(found) == CONF.placement.max_allocation_candidates
    assert len({tuple(sorted(areq['allocations'])) for areq in found}) > 1
    assert hostile < 50 * benign * (
        CONF.placement.max_allocation_candidates / DEVICES), (
        hostile, benign)


def test_groups_that_cannot_all_fit_are_refused_at_once(tree):
    _devices(tree)
    _found(tree, _groups(1))
    benign, _found_one = _seconds(tree, _groups(1))
    # Ten single-unit groups, nine single-unit devices: no candidate, and
    # not 9!/0! dead ends to find it out.
    hostile, found = _seconds(tree, _groups(DEVICES + 1))
    assert found == []
    assert hostile < 20 * benign, (hostile, benign)


def test_the_cap_counts_candidates_of_every_anchor(tree):
    for root in ('a', 'b', 'c'):
        tree.provider(root)
        for index in range(3):
            tree.provider('%s%d' % (root, index), parent=root,
                          inventory={'FPGA': {'total': 1}})
    CONF.set_override('max_allocation_candidates', 7, 'placement')
    found = _found(tree, _groups(2))
    assert len(found) == 7
    # Six in the first tree (3 x 2 ways), then the second's first.
    assert [len({tree.name_of(rp)[0] for rp in areq['allocations']})
            for areq in found] == [1] * 7
    assert {tree.name_of(rp)[0] for rp in found[-1]['allocations']} == {'b'}


def test_too_many_groups_are_a_400_naming_them():
    params = _groups(request.MAX_GROUPS + 2)
    with pytest.raises(exception.InvalidQuery) as raised:
        request.from_params(params)
    detail = raised.value.message
    assert str(request.MAX_GROUPS) in detail
    past = sorted(key for key in params if key.startswith('resources'))[
        request.MAX_GROUPS:]
    assert all(key in detail for key in past), detail


def test_as_many_groups_as_the_cap_are_accepted():
    found = request.from_params(_groups(request.MAX_GROUPS))
    assert len(found.groups) == request.MAX_GROUPS


@pytest.mark.parametrize('limit', [
    str(2 ** 63), '99999999999999999999999', '9' * 5000])
def test_a_huge_limit_is_a_400_naming_it(limit):
    with pytest.raises(exception.InvalidQuery) as raised:
        request.from_params({'resources': 'FPGA:1', 'limit': limit})
    assert "'limit'" in raised.value.message


def test_the_default_cap_is_finite():
    assert CONF.placement.max_allocation_candidates > 0
