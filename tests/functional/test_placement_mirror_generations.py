"""The incremental sync of the Placement mirror (``cyquota.cloud.mirror``)
against a real Placement, on PostgreSQL and MariaDB: a sync reads only the
providers whose generation moved (and the allocations of those that held
some), and its copy is after every kind of change exactly what a full read
gives; a sync overtaken by another starts again, and one that Placement
leaves mid-way records nothing."""

import contextlib
import random
import uuid

import pytest
import sqlalchemy as sa

from cyquota.cloud import mirror
from cyquota.cloud import placement_client
from cyquota.cloud import placement_errors
from cyquota.db import api as db_api
from cyquota.db import mirror_models
from cyquota.placement import allocations
from cyquota.placement import providers
from cyquota.placement import request
from servers import placement_server
from tests.functional import test_placement_mirror as base

pytestmark = pytest.mark.timeout(600)

PROJECT, USER = base.PROJECT, base.USER
_seen = mirror_models.SeenProvider.__table__


@pytest.fixture
def cloud(placement, backend, ctx, tmp_path):
    placement_server.empty(placement)
    return base.Mirror(base._conf(tmp_path, placement.url), placement, ctx)


@pytest.fixture
def node(cloud):
    """A compute node with two GPU devices (PGPU 4 each) in an aggregate,
    one of them with a trait."""
    placement = cloud.cloud
    root = placement.provider(name='node-1')
    gpus = [placement.provider(name='node-1-gpu%d' % i, parent=root)
            for i in range(2)]
    for gpu in gpus:
        placement.inventory(gpu, {'PGPU': 4})
    agg = str(uuid.uuid4())
    placement.aggregates(root, [agg])
    placement.traits(gpus[0], ['HW_GPU_API_VULKAN'])
    return root, gpus, agg


def _requests_served(cloud):
    """How many requests Placement has answered (a log line each)."""
    with open(cloud.cloud.server.path / 'placement.log') as log:
        return sum('placement.requestlog' in line for line in log)


@contextlib.contextmanager
def _counted(cloud):
    counted = []
    before = _requests_served(cloud)
    yield counted
    counted.append(_requests_served(cloud) - before)


def _recorded(ctx):
    with db_api.reader(ctx) as session:
        return {row.uuid: (row.generation, row.allocated)
                for row in session.execute(sa.select(_seen))}


def _synced_as_full(cloud):
    """An incremental sync, then a full one that must find nothing to
    change (but the same providers to keep) and record the same
    generations; the incremental result."""
    result = cloud.sync()
    recorded = _recorded(cloud.ctx)
    full = mirror.sync(cloud.ctx, client=cloud.client, conf=cloud.conf,
                       full=True)
    assert full.kept == result.kept
    assert set(dict(full.rows(), **{'providers kept (held)': 0}).values()
               ) == {0}, full.changes
    assert _recorded(cloud.ctx) == recorded
    return result


def _rows(result):
    return dict(result.rows())


def test_a_sync_reads_only_what_moved(cloud, node, ctx):
    root, gpus, _agg = node
    cloud.cloud.allocate(str(uuid.uuid4()), {gpus[0]: {'PGPU': 1}},
                         PROJECT, USER)
    with _counted(cloud) as full:
        cloud.sync()
    # The listing; each provider's inventories; aggregates and traits of
    # the three copied; allocations of the two devices (and negotiation).
    assert full[0] >= 1 + 3 + 3 * 2 + 2
    with _counted(cloud) as unchanged:
        assert not cloud.sync().changes
    # The listing, and the allocations of the one device in use.
    assert unchanged == [2]
    cloud.cloud.inventory(gpus[1], {'PGPU': 6})
    with _counted(cloud) as one_changed:
        assert _rows(cloud.sync())['inventory changes'] == 1
    # And gpu1's inventories, aggregates, traits and allocations.
    assert one_changed == [2 + 4]
    assert _recorded(ctx)[gpus[0]] == (
        cloud.cloud.generation(gpus[0]), True)
    assert _recorded(ctx)[gpus[1]] == (
        cloud.cloud.generation(gpus[1]), False)
    assert set(_recorded(ctx)) == {root} | set(gpus)


def test_every_kind_of_change_is_copied_as_a_full_read_would(cloud, node,
                                                             ctx):
    root, gpus, agg = node
    placement = cloud.cloud
    other_root = placement.provider(name='node-2')
    other_gpu = placement.provider(name='node-2-gpu0', parent=other_root)
    placement.inventory(other_gpu, {'PGPU': 2})
    bare_root = placement.provider(name='node-3')
    placement.aggregates(bare_root, [str(uuid.uuid4())])
    placement.traits(bare_root, ['CUSTOM_RACK_3'])
    placement.inventory(placement.provider(name='cpu-only'), {'VCPU': 8})
    assert _rows(_synced_as_full(cloud))['providers added'] == 5

    placement.inventory(gpus[0], {'PGPU': 6})
    assert _rows(_synced_as_full(cloud))['inventory changes'] == 1
    placement.traits(gpus[1], ['CUSTOM_FAST'])
    assert _rows(_synced_as_full(cloud))['trait changes'] == 1
    placement.aggregates(root, [])
    placement.aggregates(other_root, [agg])
    assert _rows(_synced_as_full(cloud))[
        'aggregate membership changes'] == 2
    server = str(uuid.uuid4())
    placement.allocate(server, {gpus[0]: {'PGPU': 2}}, PROJECT, USER)
    assert _rows(_synced_as_full(cloud))['usage changes'] == 1
    # Moved: Placement bumps only the provider it moves to.
    before = placement.generation(gpus[0])
    placement.allocate(server, {gpus[1]: {'PGPU': 2}}, PROJECT, USER)
    assert placement.generation(gpus[0]) == before
    assert _rows(_synced_as_full(cloud))['usage changes'] == 2
    assert allocations.get_for_provider(ctx, gpus[0])[1] == {}
    placement.call('DELETE', '/allocations/%s' % server)
    assert _rows(_synced_as_full(cloud))['usage changes'] == 1
    assert allocations.get_for_provider(ctx, gpus[1])[1] == {}
    # A class cyquota does not count moves the generation, changes nothing.
    placement.inventory(gpus[1], {'PGPU': 4, 'VCPU': 2})
    assert not _synced_as_full(cloud).changes
    # Reparented under a root never copied, and renamed.
    placement.call('PUT', '/resource_providers/%s' % other_gpu, {
        'name': 'moved-gpu', 'parent_provider_uuid': bare_root})
    rows = _rows(_synced_as_full(cloud))
    assert (rows['providers added'], rows['providers removed']) == (1, 1)
    assert providers.get(ctx, other_gpu).root_provider_uuid == bare_root
    assert providers.get(ctx, other_gpu).name == 'moved-gpu'
    placement.call('PUT', '/resource_providers/%s' % root,
                   {'name': 'node-1-renamed'})
    assert _rows(_synced_as_full(cloud))['providers updated'] == 1
    placement.call('DELETE', '/resource_providers/%s' % gpus[1])
    assert _rows(_synced_as_full(cloud))['providers removed'] == 1
    assert not _synced_as_full(cloud).changes


def test_a_consumer_that_stops_being_cyquotas_is_copied(cloud, node, ctx):
    """Placement's allocation of a consumer that cyquota itself claims is
    left out of the copy; once cyquota frees it, it is another consumer's
    usage, although Placement's generations did not move."""
    _synced_as_full(cloud)
    consumer = str(uuid.uuid4())
    allocations.claim(ctx, consumer, PROJECT, request.from_params(
        {'resources': 'GPU:1'}))
    (taken,) = allocations.get_for_consumer(ctx, consumer)['allocations']
    cloud.cloud.allocate(consumer, {taken: {'PGPU': 1}}, PROJECT, USER)
    assert not _rows(_synced_as_full(cloud))['usage changes']
    allocations.free(ctx, consumer)
    assert _rows(_synced_as_full(cloud))['usage changes'] == 1
    assert allocations.get_for_provider(ctx, taken)[1] == {
        consumer: {'resources': {'GPU': 1}}}


def test_a_kept_provider_is_copied_as_a_full_read_would(cloud, node, ctx):
    root, gpus, _agg = node
    _synced_as_full(cloud)
    consumer = str(uuid.uuid4())
    allocations.claim(ctx, consumer, PROJECT, request.from_params(
        {'resources': 'GPU:1'}))
    (taken,) = allocations.get_for_consumer(ctx, consumer)['allocations']
    # Its inventory goes while cyquota holds it: it leaves the copy but is
    # kept, and stays kept while its generation does not move.
    cloud.cloud.call('DELETE', '/resource_providers/%s/inventories' % taken)
    assert _synced_as_full(cloud).kept == {taken}
    assert _synced_as_full(cloud).kept == {taken}
    cloud.cloud.inventory(taken, {'PGPU': 4})
    assert _synced_as_full(cloud).kept == frozenset()
    assert {p.uuid for p in providers.get_all(ctx)} == {root} | set(gpus)


def _allocate(placement, consumer, device):
    """``consumer`` holds one PGPU of ``device`` and nothing else (a move
    when it held another), unless Placement refuses."""
    current = placement.call('GET', '/allocations/%s' % consumer)
    placement.call('PUT', '/allocations/%s' % consumer, {
        'allocations': {device: {'resources': {'PGPU': 1}}},
        'consumer_generation': current.get('consumer_generation'),
        'project_id': PROJECT, 'user_id': USER,
        'consumer_type': 'INSTANCE'}, expect=(204, 400, 409))


def _random_step(placement, rng, roots, devices, consumers):
    """One random change of the cloud: an inventory, traits, aggregates,
    a consumer's allocation written, moved or deleted, a device
    reparented, renamed, deleted or added. What Placement refuses (an
    inventory in use removed, a device full) changes nothing."""
    device = rng.choice(devices)
    kind = rng.randrange(9)
    if kind == 0:
        placement.call('PUT', '/resource_providers/%s/inventories' % device, {
            'resource_provider_generation': placement.generation(device),
            'inventories': {'PGPU': {'total': rng.randint(2, 8)}}
            if rng.random() < 0.8 else {'VCPU': {'total': 4}}},
            expect=(200, 409))
    elif kind == 1:
        placement.traits(device, rng.sample(
            ['CUSTOM_A', 'CUSTOM_B', 'HW_GPU_API_VULKAN'], rng.randint(0, 2)))
    elif kind == 2:
        placement.aggregates(rng.choice(roots + devices), rng.sample(
            ['9b0e0e52-0000-4000-8000-00000000000%d' % i for i in range(3)],
            rng.randint(0, 2)))
    elif kind in (3, 4):
        _allocate(placement, rng.choice(consumers), device)
    elif kind == 5:
        placement.call('DELETE', '/allocations/%s' % rng.choice(consumers),
                       expect=(204, 404))
    elif kind == 6:
        placement.call('PUT', '/resource_providers/%s' % device, {
            'name': 'dev-%d' % rng.randrange(10 ** 6),
            'parent_provider_uuid': rng.choice(roots)})
    elif kind == 7 and not placement.call(
            'GET', '/resource_providers/%s/allocations'
            % device)['allocations']:
        placement.call('DELETE', '/resource_providers/%s' % device)
        devices.remove(device)
    else:
        added = placement.provider(parent=rng.choice(roots))
        placement.inventory(added, {'PGPU': 4})
        devices.append(added)


def test_a_random_walk_of_changes_is_copied_as_a_full_read_would(
        cloud, backend):
    placement = cloud.cloud
    rng = random.Random('mirror-%s' % backend)
    roots = [placement.provider(name='root-%d' % i) for i in range(3)]
    devices = []
    for i in range(6):
        devices.append(placement.provider(parent=roots[i % 3]))
        placement.inventory(devices[-1], {'PGPU': 4})
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    _synced_as_full(cloud)
    for _step in range(20):
        for _change in range(rng.randint(1, 3)):
            _random_step(placement, rng, roots, devices, consumers)
        _synced_as_full(cloud)


class _Interleaved(placement_client.PlacementClient):
    """A client that, once, runs ``then()`` right after the listing, as if
    another process acted while this sync reads."""

    then = None

    def resource_providers(self):
        listed = super().resource_providers()
        then, self.then = self.then, None
        if then:
            then()
        return listed


def test_a_sync_overtaken_by_another_reads_again(cloud, node, ctx, caplog):
    _root, gpus, _agg = node
    cloud.sync()
    client = _Interleaved(cloud.conf)

    def another_sync():
        # Moves gpu0's generation after this sync listed it unmoved; the
        # other sync records the new one.
        cloud.cloud.inventory(gpus[0], {'PGPU': 7})
        cloud.sync()
    client.then = another_sync
    with caplog.at_level('INFO', logger='cyquota.cloud.mirror'):
        assert not mirror.sync(ctx, client=client, conf=cloud.conf).changes
    assert 'another sync recorded meanwhile' in caplog.text
    assert _synced_as_full(cloud).changes.inventories == {}


def test_placement_leaving_mid_sync_records_nothing(cloud, node, ctx):
    _root, gpus, _agg = node
    cloud.sync()
    recorded = _recorded(ctx)
    copied = {p.uuid: p for p in providers.get_all(ctx)}
    cloud.cloud.inventory(gpus[0], {'PGPU': 7})
    client = _Interleaved(cloud.conf)
    client.then = cloud.cloud.server.stop
    try:
        with pytest.raises(placement_errors.PlacementUnreachable):
            mirror.sync(ctx, client=client, conf=cloud.conf)
    finally:
        cloud.cloud.server.start()
    assert _recorded(ctx) == recorded
    assert {p.uuid: p for p in providers.get_all(ctx)} == copied
    assert _rows(_synced_as_full(cloud))['inventory changes'] == 1
