"""Claiming and freeing devices (the API the ledger calls). A claim that
loses a race for its devices: tests/functional/test_claim_backends.py
(SQLite writers hold the database from BEGIN: no race to lose)."""

import pytest

from cyquota.db import api as db_api
from cyquota import exception
from cyquota.placement import allocations
from cyquota.placement import device_errors
from cyquota.placement import providers
from cyquota.placement import request

TWO_DEVICES = {'resources1': 'FPGA:1', 'resources2': 'FPGA:1',
               'group_policy': 'isolate'}


@pytest.fixture
def devices(tree):
    tree.provider('cn')
    tree.provider('dev1', parent='cn', inventory={'FPGA': {'total': 1}})
    tree.provider('dev2', parent='cn', inventory={'FPGA': {'total': 1}})
    return tree


def test_claim_writes_the_first_candidate(devices):
    got = allocations.claim(devices.ctx, 'vm-1', 'project-a',
                            request.from_params(TWO_DEVICES), user_id='u')
    assert got == {devices.rp['dev1']: {'resources': {'FPGA': 1}},
                   devices.rp['dev2']: {'resources': {'FPGA': 1}}}
    assert allocations.get_for_consumer(devices.ctx, 'vm-1') == {
        'allocations': got, 'project_id': 'project-a', 'user_id': 'u'}
    assert allocations.usages(devices.ctx, devices.rp['dev1']) == (
        2, {'FPGA': 1})
    assert allocations.get_for_provider(devices.ctx, devices.rp['dev2']) == (
        2, {'vm-1': {'resources': {'FPGA': 1}}})


def test_a_full_device_is_never_claimed_again(devices):
    one = request.from_params({'resources': 'FPGA:1'})
    first = allocations.claim(devices.ctx, 'vm-1', 'p', one)
    second = allocations.claim(devices.ctx, 'vm-2', 'p', one)
    assert set(first) | set(second) == {devices.rp['dev1'],
                                        devices.rp['dev2']}
    with pytest.raises(device_errors.NoValidAllocation) as caught:
        allocations.claim(devices.ctx, 'vm-3', 'p', one)
    assert caught.value.message == (
        'No devices can satisfy the request: no providers have room for '
        'FPGA:1 within the requested aggregates')
    assert allocations.get_for_consumer(devices.ctx, 'vm-3')[
        'project_id'] is None


def test_one_claim_per_consumer(devices):
    one = request.from_params({'resources': 'FPGA:1'})
    allocations.claim(devices.ctx, 'vm-1', 'p', one)
    with pytest.raises(device_errors.ConsumerExists):
        allocations.claim(devices.ctx, 'vm-1', 'p', one)
    assert allocations.usages(devices.ctx, devices.rp['dev2'])[1] == {
        'FPGA': 0}


def test_free_gives_everything_back_once(devices):
    got = allocations.claim(devices.ctx, 'vm-1', 'p',
                            request.from_params(TWO_DEVICES))
    assert allocations.free(devices.ctx, 'vm-1') == got
    assert allocations.free(devices.ctx, 'vm-1') == {}
    assert allocations.get_for_consumer(devices.ctx, 'vm-1')[
        'allocations'] == {}
    assert providers.get(devices.ctx, devices.rp['dev1']).generation == 3
    allocations.claim(devices.ctx, 'vm-1', 'p',
                      request.from_params(TWO_DEVICES))


def test_claim_joins_the_callers_transaction(devices):
    one = request.from_params({'resources': 'FPGA:1'})
    with pytest.raises(RuntimeError):
        with db_api.writer(devices.ctx):
            allocations.claim(devices.ctx, 'vm-1', 'p', one)
            raise RuntimeError('the ledger refused the reservation')
    assert allocations.get_for_consumer(devices.ctx, 'vm-1')[
        'allocations'] == {}
    with db_api.writer(devices.ctx):
        allocations.claim(devices.ctx, 'vm-1', 'p', one)
    assert allocations.get_for_consumer(devices.ctx, 'vm-1')['allocations']


@pytest.mark.parametrize('args', [
    ('', 'p', None), ('c', None, None), ('c', 'p', 'x' * 256),
    ('c', 'p', None, {'resources': 'FPGA:1'})])
def test_bad_arguments(devices, args):
    consumer, project, user, *device_request = args
    device_request = (device_request[0] if device_request
                      else request.from_params({'resources': 'FPGA:1'}))
    with pytest.raises(exception.Invalid):
        allocations.claim(devices.ctx, consumer, project, device_request,
                          user_id=user)
