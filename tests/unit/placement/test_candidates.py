"""Allocation candidates on seed 003's tree, and Placement's search rules.

cn1 (aggA) has children numa1_1 (aggC) and numa1_2; cn2 (aggB) has numa2_1
and numa2_2; sharing providers ss1 (aggB) and ss2 (aggC). Every provider
offers FPGA, so each can be a candidate on its own.
"""

import pytest

from cyquota.placement import candidates
from cyquota.placement import providers
from cyquota.placement import request
from tests.unit.placement import conftest

ALL = {'cn1', 'numa1_1', 'numa1_2', 'cn2', 'numa2_1', 'numa2_2', 'ss1',
       'ss2'}


def search(tree, params):
    return candidates.search(tree.ctx, request.from_params(params))


def chosen(tree, params):
    """Names of the providers that appear in any candidate."""
    return {tree.name_of(rp) for areq in
            search(tree, params)['allocation_requests']
            for rp in areq['allocations']}


def member_of(tree, *values):
    """member_of values with aggregate names replaced by their uuids."""
    result = []
    for value in values:
        for name, agg in sorted(tree.agg.items(), key=lambda i: -len(i[0])):
            value = value.replace(name, agg)
        result.append(value)
    return result


def test_without_member_of_every_provider_is_a_candidate(seed):
    assert chosen(seed, {'resources': 'FPGA:1'}) == ALL


@pytest.mark.parametrize('forbidden, excluded', [
    ('!aggA', {'cn1', 'numa1_1', 'numa1_2'}),
    ('!aggB', {'cn2', 'numa2_1', 'numa2_2', 'ss1'}),
    ('!aggC', {'numa1_1', 'ss2'}),
])
def test_unnumbered_forbidden_spans_the_tree(seed, forbidden, excluded):
    params = {'resources': 'FPGA:1', 'member_of': member_of(seed, forbidden)}
    assert chosen(seed, params) == ALL - excluded


@pytest.mark.parametrize('forbidden, excluded', [
    ('!aggA', {'cn1'}),
    ('!aggB', {'cn2', 'ss1'}),
    ('!aggC', {'numa1_1', 'ss2'}),
])
def test_numbered_forbidden_checks_the_provider_itself(seed, forbidden,
                                                       excluded):
    params = {'resources1': 'FPGA:1',
              'member_of1': member_of(seed, forbidden)}
    assert chosen(seed, params) == ALL - excluded


@pytest.mark.parametrize('forbidden, excluded', [
    ('!aggA', {'cn1'}),
    ('!aggB', {'cn2', 'ss1'}),
    ('!aggC', {'numa1_1', 'ss2'}),
    ('!in:aggA,aggC', {'cn1', 'numa1_1', 'ss2'}),
])
def test_resource_providers_membership_is_direct(seed, forbidden, excluded):
    from cyquota.placement import member_of as member_of_mod
    found = providers.get_all(seed.ctx, member_of=member_of_mod.parse(
        member_of(seed, forbidden)))
    assert {seed.name_of(p.uuid) for p in found} == ALL - excluded


def test_not_in_is_several_forbidden_values(seed):
    assert (chosen(seed, {'resources': 'FPGA:1',
                          'member_of': member_of(seed, '!in:aggA,aggB')})
            == chosen(seed, {'resources': 'FPGA:1', 'member_of': member_of(
                seed, '!aggA', '!aggB')})
            == {'ss2'})


def test_unnumbered_required_spans_the_tree(seed):
    # The root's aggregate covers its children; ss2 shares aggC with
    # numa1_1, so it serves cn1's tree as well.
    assert chosen(seed, {'resources': 'FPGA:1',
                         'member_of': member_of(seed, 'aggA')}) == {
        'cn1', 'numa1_1', 'numa1_2', 'ss2'}
    assert chosen(seed, {'resources1': 'FPGA:1',
                         'member_of1': member_of(seed, 'aggA')}) == {'cn1'}


def test_repeated_required_values_hold_for_one_provider(seed):
    # Placement ANDs the lists on one provider's own aggregates (then the
    # root spans): no provider is itself in (aggA or aggB) and in aggC.
    params = {'resources': 'FPGA:1', 'member_of': member_of(
        seed, 'in:aggA,aggB', 'aggC', '!aggB')}
    assert chosen(seed, params) == set()


def test_required_and_forbidden_at_once_matches_nothing(seed):
    params = {'resources': 'FPGA:1',
              'member_of': member_of(seed, 'aggA', '!aggA')}
    assert search(seed, params) == {'allocation_requests': [],
                                    'provider_summaries': {}}


def test_summaries_cover_the_trees_of_the_candidates(seed):
    result = search(seed, {'resources': 'FPGA:1',
                           'member_of': member_of(seed, '!aggB')})
    assert {seed.name_of(rp) for rp in result['provider_summaries']} == {
        'cn1', 'numa1_1', 'numa1_2', 'ss2'}
    numa = result['provider_summaries'][seed.rp['numa1_1']]
    assert numa == {
        'resources': {'FPGA': {'capacity': 8, 'used': 0}}, 'traits': [],
        'parent_provider_uuid': seed.rp['cn1'],
        'root_provider_uuid': seed.rp['cn1']}
    assert result['provider_summaries'][seed.rp['ss2']]['traits'] == [
        'MISC_SHARES_VIA_AGGREGATE']
    for areq in result['allocation_requests']:
        [provider] = areq['allocations']
        assert areq['allocations'][provider] == {'resources': {'FPGA': 1}}
        assert areq['mappings'] == {'': [provider]}


def test_mixed_query_of_the_seed(tree):
    # member_of=in:agg1,agg2&member_of=agg3&member_of=!agg4: in agg1 or
    # agg2, in agg3, not in agg4.
    fpga = conftest.FPGA_8
    tree.provider('p1', aggs=['agg1', 'agg3'], inventory=fpga)
    tree.provider('p2', aggs=['agg2', 'agg3'], inventory=fpga)
    tree.provider('p3', aggs=['agg1'], inventory=fpga)
    tree.provider('p4', aggs=['agg3'], inventory=fpga)
    tree.provider('p5', aggs=['agg1', 'agg3', 'agg4'], inventory=fpga)
    tree.provider('p6', inventory=fpga)
    mixed = member_of(tree, 'in:agg1,agg2', 'agg3', '!agg4')
    assert chosen(tree, {'resources': 'FPGA:1', 'member_of': mixed}) == {
        'p1', 'p2'}
    assert chosen(tree, {'resources1': 'FPGA:1', 'member_of1': mixed}) == {
        'p1', 'p2'}
    from cyquota.placement import member_of as member_of_mod
    found = providers.get_all(tree.ctx, member_of=member_of_mod.parse(mixed))
    assert {tree.name_of(p.uuid) for p in found} == {'p1', 'p2'}


def test_unnumbered_group_combines_a_tree_and_a_sharing_provider(tree):
    tree.provider('cn', aggs=['agg'])
    tree.provider('dev', parent='cn', inventory={'FPGA': {'total': 1}})
    tree.provider('storage', aggs=['agg'], trait_names=['MISC_SHARES_VIA_'
                                                        'AGGREGATE'],
                  inventory={'DISK_GB': {'total': 100}})
    tree.provider('lonely', inventory={'FPGA': {'total': 1}})
    result = search(tree, {'resources': 'FPGA:1,DISK_GB:10'})
    assert [{tree.name_of(rp): body['resources']
             for rp, body in areq['allocations'].items()}
            for areq in result['allocation_requests']] == [
        {'dev': {'FPGA': 1}, 'storage': {'DISK_GB': 10}}]
    [areq] = result['allocation_requests']
    assert sorted(areq['mappings']['']) == sorted(
        [tree.rp['dev'], tree.rp['storage']])
    assert {tree.name_of(rp) for rp in result['provider_summaries']} == {
        'cn', 'dev', 'storage'}


def test_group_policy(tree):
    tree.provider('cn')
    tree.provider('dev1', parent='cn', inventory={'FPGA': {'total': 2}})
    tree.provider('dev2', parent='cn', inventory={'FPGA': {'total': 1}})
    params = {'resources1': 'FPGA:1', 'resources2': 'FPGA:1'}

    def combos(policy):
        return sorted(
            (tuple(sorted((tree.name_of(rp), body['resources']['FPGA'])
                          for rp, body in areq['allocations'].items())),
             tuple(tree.name_of(rp) for suffix in ('1', '2')
                   for rp in areq['mappings'][suffix]))
            for areq in search(tree, dict(params, group_policy=policy))[
                'allocation_requests'])

    # Candidates differ by their mappings too, as in Placement.
    assert combos('isolate') == [
        ((('dev1', 1), ('dev2', 1)), ('dev1', 'dev2')),
        ((('dev1', 1), ('dev2', 1)), ('dev2', 'dev1'))]
    # Both groups on dev1 fold into FPGA:2; dev2 cannot take two.
    assert combos('none') == [
        ((('dev1', 1), ('dev2', 1)), ('dev1', 'dev2')),
        ((('dev1', 1), ('dev2', 1)), ('dev2', 'dev1')),
        ((('dev1', 2),), ('dev1', 'dev1'))]


@pytest.mark.parametrize('inventory, amount, fits', [
    ({'total': 4, 'reserved': 3}, 1, True),
    ({'total': 4, 'reserved': 3}, 2, False),
    ({'total': 4, 'reserved': 4}, 1, False),
    ({'total': 4, 'allocation_ratio': 1.5}, 6, True),
    ({'total': 4, 'allocation_ratio': 1.5}, 7, False),
    ({'total': 8, 'min_unit': 2}, 1, False),
    ({'total': 8, 'max_unit': 2}, 3, False),
    ({'total': 8, 'step_size': 2}, 3, False),
    ({'total': 8, 'step_size': 2}, 4, True),
])
def test_capacity(tree, inventory, amount, fits):
    tree.provider('dev', inventory={'FPGA': inventory})
    found = chosen(tree, {'resources': 'FPGA:%d' % amount})
    assert found == ({'dev'} if fits else set())


def test_limit_keeps_the_first_candidates_and_their_summaries(tree):
    for name in ('a', 'b', 'c'):
        tree.provider(name, inventory=conftest.FPGA_8)
    result = search(tree, {'resources': 'FPGA:1', 'limit': '2'})
    assert [tree.name_of(rp) for areq in result['allocation_requests']
            for rp in areq['allocations']] == ['a', 'b']
    assert {tree.name_of(rp) for rp in result['provider_summaries']} == {
        'a', 'b'}


def test_max_allocation_candidates_caps_the_search(tree):
    from cyquota.conf import CONF
    for name in ('a', 'b', 'c'):
        tree.provider(name, inventory=conftest.FPGA_8)
    CONF.set_override('max_allocation_candidates', 1, 'placement')
    assert len(search(tree, {'resources': 'FPGA:1'})[
        'allocation_requests']) == 1


def test_randomized_candidates_are_a_sample_of_all(tree):
    from cyquota.conf import CONF
    for name in ('a', 'b', 'c', 'd'):
        tree.provider(name, inventory=conftest.FPGA_8)
    CONF.set_override('randomize_allocation_candidates', True, 'placement')
    result = search(tree, {'resources': 'FPGA:1', 'limit': '2'})
    names = {tree.name_of(rp) for areq in result['allocation_requests']
             for rp in areq['allocations']}
    assert len(names) == 2 and names <= {'a', 'b', 'c', 'd'}
