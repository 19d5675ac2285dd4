"""The lease-pool rule of seed 003: ordinary requests stay out of lease
pools, a request carrying reservation:<id> lands only in its pool."""

import datetime

import pytest

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.leases import devices as lease_devices
from cyquota.placement import aggregates
from cyquota.placement import allocations
from cyquota.placement import candidates
from cyquota.placement import device_errors
from cyquota.placement import member_of
from cyquota.placement import pools as pool_rule
from cyquota.placement import request

ONE = {'FPGA': {'total': 1}}


@pytest.fixture
def pools(tree):
    """A free pool and lease r1's pool (of devices), a pool of compute
    nodes (its devices are in it through the root), and plain devices."""
    tree.provider('plain', inventory=ONE)
    tree.provider('free_dev', aggs=['free'], inventory=ONE)
    tree.provider('r1_dev', aggs=['r1'], inventory=ONE)
    tree.provider('pool_cn', aggs=['r2'])
    tree.provider('r2_dev', parent='pool_cn', inventory=ONE)
    tree.provider('other_dev', aggs=['other'], inventory=ONE)
    aggregates.put(tree.ctx, tree.agg['free'], 'blazar free pool',
                   {'reservation:free-pool': 'true'})
    aggregates.put(tree.ctx, tree.agg['r1'], 'lease r1',
                   {'reservation:r1': 'r1'})
    aggregates.put(tree.ctx, tree.agg['r2'], 'lease r2',
                   {'reservation:r2': 'r2', 'owner': 'ops'})
    aggregates.put(tree.ctx, tree.agg['other'], 'not a pool',
                   {'reservations': 'x', 'RESERVATION:r1': 'case differs'})
    return tree


def chosen(tree, **params):
    if not any(key.startswith('resources') for key in params):
        params['resources'] = 'FPGA:1'
    result = candidates.search(tree.ctx, request.from_params(params))
    return {tree.name_of(rp) for areq in result['allocation_requests']
            for rp in areq['allocations']}


def test_ordinary_requests_never_land_in_a_pool(pools):
    assert chosen(pools) == {'plain', 'other_dev'}
    assert chosen(pools, resources1='FPGA:1') == {'plain', 'other_dev'}


def test_a_reservation_key_lands_only_in_its_pool(pools):
    assert chosen(pools, member_key='reservation:r1') == {'r1_dev'}
    assert chosen(pools, resources1='FPGA:1',
                  member_key='reservation:r1') == {'r1_dev'}


def test_a_pool_of_compute_nodes_holds_their_devices(pools):
    assert chosen(pools, member_key='reservation:r2') == {'r2_dev'}


def test_a_key_no_aggregate_holds_matches_nothing(pools):
    assert chosen(pools, member_key='reservation:unknown') == set()


def test_the_pool_rule_comes_on_top_of_member_of(pools):
    assert chosen(pools, member_key='reservation:r1',
                  member_of='!' + pools.agg['r1']) == set()
    assert chosen(pools, member_of=pools.agg['free']) == set()


def test_other_keys_do_not_lift_the_exclusion(pools):
    assert chosen(pools, member_key='owner') == {'plain', 'other_dev'}


def test_prefixes_come_from_the_configuration(pools):
    CONF.set_override('default_forbidden_member_prefix', [], 'placement')
    CONF.set_override('required_member_prefix', [], 'placement')
    everything = {'plain', 'free_dev', 'r1_dev', 'r2_dev', 'other_dev'}
    assert chosen(pools) == everything
    assert chosen(pools, member_key='reservation:r1') == everything
    CONF.set_override('default_forbidden_member_prefix', ['lease-'],
                      'placement')
    assert chosen(pools) == everything
    CONF.set_override('default_forbidden_member_prefix', ['owner'],
                      'placement')
    assert chosen(pools) == everything - {'r2_dev'}


def leased(tree, amount, **params):
    """The devices chosen for a lease of ``amount`` FPGAs (one from each
    device), or None when there are too few."""
    need = lease_devices.DeviceNeed('r', 'FPGA', amount, member_of.parse(
        [params['member_of']] if 'member_of' in params else []),
        params.get('member_key'))
    start = datetime.datetime(2030, 1, 1)
    with db_api.get_engine().connect() as conn:
        try:
            choice = lease_devices.choose(
                conn, [need], start, start + datetime.timedelta(hours=1),
                pool_rule.Carrier('p1', privileged=True))
        except device_errors.NoValidAllocation:
            return None
    return {name for _uuid, name, _root in choice.names.values()}


@pytest.mark.parametrize('forbidden', [['reservation:'], [], ['owner']])
@pytest.mark.parametrize('params', [{}, {'member_key': 'reservation:r1'},
                                    {'member_key': 'owner'},
                                    {'member_of': '!free'}])
def test_lease_devices_follow_the_pool_rule(pools, forbidden, params):
    """The devices of a lease are those allocation candidates offer the
    same request (a keyless one has its pools left out by the read of the
    providers, one carrying a key by the rule read first)."""
    CONF.set_override('default_forbidden_member_prefix', forbidden,
                      'placement')
    if 'member_of' in params:
        params = dict(params, member_of='!' + pools.agg['free'])
    offered = chosen(pools, **params)
    assert leased(pools, len(offered), **params) == (offered or None)
    assert leased(pools, len(offered) + 1, **params) is None


def test_claims_follow_the_pool_rule(pools):
    ordinary = request.from_params({'resources': 'FPGA:1'})
    leased = request.from_params({'resources': 'FPGA:1',
                                  'member_key': 'reservation:r1'})
    got = allocations.claim(pools.ctx, 'lease-r1', 'p1', leased)
    assert set(got) == {pools.rp['r1_dev']}
    first = allocations.claim(pools.ctx, 'vm-1', 'p1', ordinary)
    second = allocations.claim(pools.ctx, 'vm-2', 'p1', ordinary)
    assert {pools.name_of(rp) for rp in list(first) + list(second)} == {
        'plain', 'other_dev'}
    with pytest.raises(device_errors.NoValidAllocation):
        allocations.claim(pools.ctx, 'vm-3', 'p1', ordinary)
