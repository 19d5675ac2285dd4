"""The cloud's Placement client against a real Placement (the
``placement`` fixture): reads of providers and what they hold, allocation
writes with consumer generations, usages by project, and a Placement that
does not answer."""

import time
import uuid

from oslo_config import cfg
import pytest

from cyquota.cloud import placement_client
from cyquota.cloud import placement_errors as errors
from cyquota.conf import placement as placement_conf
from servers import placement_server

pytestmark = pytest.mark.timeout(300)

PROJECT = 'b6e8e1a4c6d94a0c8f3e5b1d2a7c9e10'
USER = '2f1c0d9e8b7a46f5a3c2b1d0e9f8a7b6'


def _conf(tmp_path, url, extra=''):
    """[placement] as an operator would set it: ``auth_type =
    admin_token`` with Placement's endpoint and noauth2's admin token."""
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    path = tmp_path / 'cyquota.conf'
    path.write_text('[placement]\nauth_type = admin_token\nendpoint = %s\n'
                    'token = %s\n%s' % (url, placement_server.TOKEN, extra))
    conf(['--config-file', str(path)], project='cyquota',
         default_config_files=[])
    return conf


@pytest.fixture
def client(tmp_path, placement):
    return placement_client.PlacementClient(_conf(tmp_path, placement.url))


@pytest.fixture
def device(placement):
    """A compute node and its GPU device (PGPU: 4, of which 1 reserved)."""
    node = placement.provider()
    gpu = placement.provider(parent=node)
    placement.inventory(gpu, {'PGPU': {'total': 4, 'reserved': 1}})
    return node, gpu


def test_microversion_is_the_highest_both_know(client):
    assert client.microversion == '1.39'


def test_providers_and_what_they_hold(client, placement, device):
    node, gpu = device
    aggregate = str(uuid.uuid4())
    placement.aggregates(gpu, [aggregate])
    placement.traits(gpu, ['CUSTOM_LEASE_POOL', 'HW_GPU_API_VULKAN'])

    providers = {rp['uuid']: rp for rp in client.resource_providers()}
    assert providers[gpu]['parent_provider_uuid'] == node
    assert providers[gpu]['root_provider_uuid'] == node
    assert providers[node]['parent_provider_uuid'] is None

    inventories = client.inventories(gpu)
    assert inventories['inventories'] == {'PGPU': {
        'total': 4, 'reserved': 1, 'min_unit': 1, 'max_unit': 2147483647,
        'step_size': 1, 'allocation_ratio': 1.0}}
    generation = inventories['resource_provider_generation']
    assert client.aggregates(gpu) == {
        'aggregates': [aggregate],
        'resource_provider_generation': generation}
    assert sorted(client.traits(gpu)['traits']) == [
        'CUSTOM_LEASE_POOL', 'HW_GPU_API_VULKAN']


def test_unknown_provider_is_not_found(client):
    missing = str(uuid.uuid4())
    with pytest.raises(errors.PlacementNotFound) as caught:
        client.inventories(missing)
    # Placement gives this one no code of its own.
    assert caught.value.code == 'placement.undefined_code'
    message = str(caught.value)
    assert message.startswith(
        'Placement GET /resource_providers/{0}/inventories: 404 '
        'placement.undefined_code: The resource could not be found. No '
        'resource provider with uuid {0} found'.format(missing)), message
    assert '\n' not in message


def test_allocations_put_get_delete(client, device):
    _, gpu = device
    lease = str(uuid.uuid4())
    assert client.consumer_allocations(lease) == {'allocations': {}}

    client.put_allocations(lease, {gpu: {'PGPU': 2}}, PROJECT, USER,
                           'LEASE', consumer_generation=None)
    held = client.consumer_allocations(lease)
    assert held['allocations'][gpu]['resources'] == {'PGPU': 2}
    assert (held['project_id'], held['user_id'], held['consumer_type']) == (
        PROJECT, USER, 'LEASE')
    generation = held['consumer_generation']
    assert client.provider_allocations(gpu)['allocations'] == {
        lease: {'resources': {'PGPU': 2}, 'consumer_generation': generation}}
    assert client.provider_usages(gpu)['usages'] == {'PGPU': 2}

    # A write at a generation read before the last one is refused.
    client.put_allocations(lease, {gpu: {'PGPU': 1}}, PROJECT, USER,
                           'LEASE', consumer_generation=generation)
    with pytest.raises(errors.GenerationConflict) as caught:
        client.put_allocations(lease, {gpu: {'PGPU': 3}}, PROJECT, USER,
                               'LEASE', consumer_generation=generation)
    assert caught.value.code == errors.CONCURRENT_UPDATE
    assert 'consumer generation conflict' in str(caught.value)
    assert client.provider_usages(gpu)['usages'] == {'PGPU': 1}

    assert client.delete_allocations(lease) is True
    assert client.delete_allocations(lease) is False
    assert client.provider_usages(gpu)['usages'] == {'PGPU': 0}


def test_no_room_is_a_conflict_but_no_generation_conflict(client, device):
    _, gpu = device
    with pytest.raises(errors.PlacementConflict) as caught:
        client.replace_allocations(str(uuid.uuid4()), {gpu: {'PGPU': 4}},
                                   PROJECT, USER, 'LEASE')
    assert type(caught.value) is errors.PlacementConflict
    assert 'Unable to allocate inventory' in str(caught.value)


class _Raced(placement_client.PlacementClient):
    """A client that another writer (Nova, another conductor) overtakes
    right after each of its first ``races`` reads of the consumer, by
    making the consumer hold ``theirs``."""

    def __init__(self, conf, cloud, races, theirs):
        super().__init__(conf)
        self.cloud = cloud
        self.races = races
        self.theirs = theirs
        self.reads = 0

    def consumer_allocations(self, consumer):
        held = super().consumer_allocations(consumer)
        self.reads += 1
        if self.reads <= self.races:
            self.cloud.allocate(consumer, self.theirs, PROJECT, USER,
                                consumer_type='LEASE')
        return held


def test_replace_retries_a_concurrent_update(tmp_path, placement, device):
    _, gpu = device
    lease = str(uuid.uuid4())
    client = _Raced(_conf(tmp_path, placement.url), placement, races=2,
                    theirs={gpu: {'PGPU': 1}})
    client.replace_allocations(lease, {gpu: {'PGPU': 2}}, PROJECT, USER,
                               'LEASE')
    assert client.reads == 3
    assert client.consumer_allocations(lease)['allocations'][gpu][
        'resources'] == {'PGPU': 2}


def test_replace_gives_up_after_the_last_try(tmp_path, placement, device):
    _, gpu = device
    lease = str(uuid.uuid4())
    client = _Raced(_conf(tmp_path, placement.url), placement,
                    races=placement_client.WRITE_ATTEMPTS,
                    theirs={gpu: {'PGPU': 1}})
    with pytest.raises(errors.GenerationConflict):
        client.replace_allocations(lease, {gpu: {'PGPU': 2}}, PROJECT, USER,
                                   'LEASE')
    assert client.reads == placement_client.WRITE_ATTEMPTS
    # The other writer's allocation stands.
    assert client.provider_usages(gpu)['usages'] == {'PGPU': 1}


def test_usages_of_a_project_by_consumer_type(client, placement, device):
    _, gpu = device
    project = uuid.uuid4().hex
    other = uuid.uuid4().hex
    server = str(uuid.uuid4())
    placement.allocate(server, {gpu: {'PGPU': 1}}, project, USER)
    placement.allocate(str(uuid.uuid4()), {gpu: {'PGPU': 1}}, other, USER)
    client.replace_allocations(str(uuid.uuid4()), {gpu: {'PGPU': 1}},
                               project, USER, 'LEASE')
    assert client.project_usages(project) == {
        'INSTANCE': {'consumer_count': 1, 'PGPU': 1},
        'LEASE': {'consumer_count': 1, 'PGPU': 1}}
    assert client.project_usages(project, user_id=uuid.uuid4().hex) == {}
    assert client.project_usages(uuid.uuid4().hex) == {}


def test_placement_stopped_is_unreachable_quickly(tmp_path, placement):
    client = placement_client.PlacementClient(
        _conf(tmp_path, placement.url, 'timeout = 5\n'))
    assert client.microversion == '1.39'
    with placement.server.stopped():
        started = time.monotonic()
        with pytest.raises(errors.PlacementUnreachable) as caught:
            client.resource_providers()
        took = time.monotonic() - started
    assert took < 2, took
    message = str(caught.value)
    assert message.startswith('Placement GET /resource_providers: '
                              'ConnectFailure: '), message
    assert '\n' not in message
    assert placement_server.TOKEN not in message
    # A client that never reached it fails the same way, at discovery.
    with placement.server.stopped():
        with pytest.raises(errors.PlacementUnreachable) as caught:
            placement_client.PlacementClient(
                _conf(tmp_path, placement.url)).microversion
    assert str(caught.value).startswith(
        'Placement version discovery failed: ')
    # Back again, the first client carries on.
    assert isinstance(client.resource_providers(), list)
