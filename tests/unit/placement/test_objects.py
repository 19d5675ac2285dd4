"""Providers, inventories, aggregates and traits over the database."""

import uuid

import pytest

from cyquota.placement import aggregates
from cyquota.placement import allocations
from cyquota.placement import device_errors
from cyquota.placement import inventories
from cyquota.placement import providers
from cyquota.placement import request
from cyquota.placement import traits


def test_trees_track_parent_and_root(tree):
    cn = tree.provider('cn')
    dev = tree.provider('dev', parent='cn')
    vf = tree.provider('vf', parent='dev')
    assert providers.get(tree.ctx, cn).root_provider_uuid == cn
    got = providers.get(tree.ctx, vf)
    assert (got.parent_provider_uuid, got.root_provider_uuid) == (dev, cn)
    assert [p.uuid for p in providers.get_all(tree.ctx, in_tree=vf)] == [
        cn, dev, vf]
    assert providers.get(tree.ctx, cn.upper()).uuid == cn


def test_create_refuses_duplicates_and_unknown_parents(tree):
    cn = tree.provider('cn')
    with pytest.raises(device_errors.ResourceProviderExists) as caught:
        providers.create(tree.ctx, 'cn')
    assert caught.value.message == (
        'Conflicting resource provider name: cn already exists.')
    with pytest.raises(device_errors.ResourceProviderExists) as caught:
        providers.create(tree.ctx, 'other', uuid=cn)
    assert caught.value.message == (
        'Conflicting resource provider uuid: %s already exists.' % cn)
    missing = str(uuid.uuid4())
    with pytest.raises(device_errors.InvalidParentProvider) as caught:
        providers.create(tree.ctx, 'dev', parent_provider_uuid=missing)
    assert 'parent provider UUID does not exist.' in caught.value.message
    assert [p.name for p in providers.get_all(tree.ctx)] == ['cn']


def test_get_all_filters(tree):
    tree.provider('a', inventory={'FPGA': {'total': 2}})
    tree.provider('b', inventory={'FPGA': {'total': 1}, 'PGPU': {'total': 1}})
    tree.provider('c')
    names = [p.name for p in providers.get_all(
        tree.ctx, resources={'FPGA': 1})]
    assert names == ['a', 'b']
    assert [p.name for p in providers.get_all(
        tree.ctx, resources={'FPGA': 1, 'PGPU': 1})] == ['b']
    assert [p.name for p in providers.get_all(tree.ctx, name='c')] == ['c']
    assert providers.get_all(tree.ctx, uuid='not-a-uuid') == []


def test_delete(tree):
    cn = tree.provider('cn')
    dev = tree.provider('dev', parent='cn', aggs=['agg'],
                        inventory={'FPGA': {'total': 1}},
                        trait_names=['CUSTOM_FAST'])
    with pytest.raises(device_errors.ResourceProviderInUse):
        providers.delete(tree.ctx, cn)
    allocations.claim(tree.ctx, 'vm', 'p',
                      request.from_params({'resources': 'FPGA:1'}))
    with pytest.raises(device_errors.ResourceProviderInUse) as caught:
        providers.delete(tree.ctx, dev)
    assert 'has allocations' in caught.value.message
    allocations.free(tree.ctx, 'vm')
    providers.delete(tree.ctx, dev)
    providers.delete(tree.ctx, cn)
    assert providers.get_all(tree.ctx) == []
    with pytest.raises(device_errors.ResourceProviderNotFound):
        providers.delete(tree.ctx, cn)


def test_inventories_need_the_current_generation(tree):
    dev = tree.provider('dev')
    generation, found = inventories.set_all(
        tree.ctx, dev, 0, {'FPGA': {'total': 4, 'reserved': 1}})
    assert generation == 1
    assert found == {'FPGA': dict(inventories.DEFAULTS, total=4, reserved=1)}
    with pytest.raises(device_errors.ConcurrentUpdate) as caught:
        inventories.set_all(tree.ctx, dev, 0, {'FPGA': {'total': 8}})
    assert caught.value.code == 409
    assert caught.value.message.startswith(
        'resource provider generation conflict')
    assert 'at generation 1, the request gave 0' in caught.value.message
    assert inventories.get_all(tree.ctx, dev) == (1, found)


@pytest.mark.parametrize('inventory, error', [
    ({'FOO': {'total': 1}}, device_errors.ResourceClassNotFound),
    ({'FPGA': {'total': 1, 'reserved': 2}}, device_errors.InvalidInventory),
    ({'FPGA': {'total': 4, 'min_unit': 3, 'max_unit': 2}},
     device_errors.InvalidInventory),
])
def test_bad_inventories_change_nothing(tree, inventory, error):
    dev = tree.provider('dev')
    with pytest.raises(error):
        inventories.set_all(tree.ctx, dev, 0, inventory)
    assert inventories.get_all(tree.ctx, dev) == (0, {})


def test_inventory_in_use_cannot_be_removed(tree):
    dev = tree.provider('dev', inventory={'FPGA': {'total': 2},
                                          'PGPU': {'total': 1}})
    allocations.claim(tree.ctx, 'vm', 'p',
                      request.from_params({'resources': 'FPGA:1'}))
    generation = tree.generation('dev')
    with pytest.raises(device_errors.InventoryInUse) as caught:
        inventories.set_all(tree.ctx, dev, generation, {'PGPU': {'total': 1}})
    assert caught.value.message == (
        "update conflict: Inventory for 'FPGA' on resource provider '%s' in "
        "use." % dev)
    # Shrinking below what is used is allowed, as in Placement.
    inventories.set_all(tree.ctx, dev, generation, {'FPGA': {'total': 1}})


def test_provider_aggregates(tree):
    dev = tree.provider('dev')
    agg1, agg2 = sorted(str(uuid.uuid4()) for _ in range(2))
    assert aggregates.set_for_provider(tree.ctx, dev, 0,
                                       [agg1.upper(), agg2]) == (
        1, [agg1, agg2])
    assert aggregates.set_for_provider(tree.ctx, dev, 1, [agg2]) == (
        2, [agg2])
    assert aggregates.get_for_provider(tree.ctx, dev) == (2, [agg2])
    with pytest.raises(device_errors.ConcurrentUpdate):
        aggregates.set_for_provider(tree.ctx, dev, 1, [])
    # The aggregate exists, nameless, since a provider was put in it.
    assert aggregates.get(tree.ctx, agg1) == {
        'uuid': agg1, 'name': None, 'metadata': {}}


def test_aggregate_names_and_metadata(tree):
    agg = str(uuid.uuid4())
    assert aggregates.put(tree.ctx, agg, 'pool', {'reservation:r1': 'r1'}) == (
        True, {'uuid': agg, 'name': 'pool',
               'metadata': {'reservation:r1': 'r1'}})
    assert aggregates.put(tree.ctx, agg, None, {'k': 'v'}) == (
        False, {'uuid': agg, 'name': None, 'metadata': {'k': 'v'}})
    assert aggregates.get_all(tree.ctx) == [aggregates.get(tree.ctx, agg)]
    tree.provider('dev', aggs=['member'])
    member = tree.agg['member']
    with pytest.raises(device_errors.AggregateInUse):
        aggregates.delete(tree.ctx, member)
    aggregates.delete(tree.ctx, agg)
    with pytest.raises(device_errors.AggregateNotFound):
        aggregates.get(tree.ctx, agg)


def test_traits(tree):
    dev = tree.provider('dev')
    assert traits.set_for_provider(
        tree.ctx, dev, 0, ['CUSTOM_FAST', traits.SHARING]) == (
        1, ['CUSTOM_FAST', 'MISC_SHARES_VIA_AGGREGATE'])
    with pytest.raises(device_errors.TraitNotFound) as caught:
        traits.set_for_provider(tree.ctx, dev, 1, ['NOT_A_TRAIT', 'CUSTOM_'])
    assert caught.value.message == 'No such trait(s): CUSTOM_, NOT_A_TRAIT.'
    assert traits.get_for_provider(tree.ctx, dev) == (
        1, ['CUSTOM_FAST', 'MISC_SHARES_VIA_AGGREGATE'])
