"""The mirror of the cloud's Placement (``cyquota.cloud.mirror``) against
a real Placement (the ``placement`` fixture), on PostgreSQL and MariaDB:
what Placement has appears after one sync and follows its changes, other
consumers' usage reduces what cyquota offers, a held provider that
vanishes is kept and marked, a Placement that stops is survived, and a
sync that finds nothing new writes nothing."""

import datetime
import logging
import threading
import uuid

from oslo_config import cfg
import pytest
import sqlalchemy as sa

from cyquota.cloud import mirror
from cyquota.cloud import mirror_state
from cyquota.cloud import placement_client
from cyquota.cloud import placement_errors
from cyquota.conf import CONF
from cyquota.conf import placement as placement_conf
from cyquota.db import api as db_api
from cyquota.db import mirror_models
from cyquota import metrics
from cyquota.placement import aggregates
from cyquota.placement import allocations
from cyquota.placement import candidates
from cyquota.placement import device_errors
from cyquota.placement import inventories
from cyquota.placement import providers
from cyquota.placement import request
from cyquota.placement import traits
from servers import placement_server
from tests import fixtures

pytestmark = pytest.mark.timeout(300)

PROJECT = 'b6e8e1a4c6d94a0c8f3e5b1d2a7c9e10'
USER = '2f1c0d9e8b7a46f5a3c2b1d0e9f8a7b6'
_kept = mirror_models.KeptProvider.__table__


def _conf(tmp_path, url, extra=''):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    path = tmp_path / 'cyquota.conf'
    path.write_text('[placement]\nsource = placement\nclass_map = GPU:PGPU\n'
                    'auth_type = admin_token\nendpoint = %s\ntoken = %s\n'
                    'timeout = 5\n%s' % (url, placement_server.TOKEN, extra))
    conf(['--config-file', str(path)], project='cyquota',
         default_config_files=[])
    return conf


class Mirror:
    """Sync the test's cyquota database from the fixture's Placement."""

    def __init__(self, conf, cloud, ctx):
        self.conf = conf
        self.cloud = cloud
        self.ctx = ctx
        self.client = placement_client.PlacementClient(conf)

    def sync(self):
        return mirror.sync(self.ctx, client=self.client, conf=self.conf)


@pytest.fixture
def cloud(placement, backend, ctx, tmp_path):
    placement_server.empty(placement)
    return Mirror(_conf(tmp_path, placement.url), placement, ctx)


@pytest.fixture
def node(cloud):
    """A compute node with two GPU devices (PGPU 4 each) in an aggregate,
    one of them with a trait, synced once."""
    placement = cloud.cloud
    root = placement.provider(name='node-1')
    gpus = [placement.provider(name='node-1-gpu%d' % i, parent=root)
            for i in range(2)]
    for gpu in gpus:
        placement.inventory(gpu, {'PGPU': {'total': 4, 'reserved': 1,
                                           'allocation_ratio': 1.0}})
    agg = str(uuid.uuid4())
    placement.aggregates(root, [agg])
    placement.traits(gpus[0], ['HW_GPU_API_VULKAN'])
    return root, gpus, agg


def _rows(result):
    return dict(result.rows())


def test_one_sync_copies_trees_inventories_aggregates_traits(cloud, node,
                                                             ctx):
    root, gpus, agg = node
    # A provider without inventory of a counted class is not copied.
    cloud.cloud.inventory(cloud.cloud.provider(name='cpu-only'),
                          {'VCPU': 8})
    result = cloud.sync()
    assert _rows(result)['providers added'] == 3
    found = {p.uuid: p for p in providers.get_all(ctx)}
    assert set(found) == {root} | set(gpus)
    assert found[gpus[0]].parent_provider_uuid == root
    assert found[gpus[1]].root_provider_uuid == root
    assert found[gpus[0]].name == 'node-1-gpu0'
    assert inventories.get_all(ctx, gpus[0])[1] == {'GPU': {
        'total': 4, 'reserved': 1, 'min_unit': 1, 'max_unit': 2147483647,
        'step_size': 1, 'allocation_ratio': 1.0}}
    assert inventories.get_all(ctx, root)[1] == {}
    assert aggregates.get_for_provider(ctx, root)[1] == [agg]
    assert traits.get_for_provider(ctx, gpus[0])[1] == ['HW_GPU_API_VULKAN']
    assert mirror_state.read(ctx)['age'] < 60
    # member_of on the root's aggregate reaches its devices.
    chosen = candidates.search(ctx, request.from_params(
        {'resources': 'GPU:3', 'member_of': agg}))
    assert {rp for areq in chosen['allocation_requests']
            for rp in areq['allocations']} == set(gpus)


def test_changes_are_followed(cloud, node, ctx):
    root, gpus, agg = node
    cloud.sync()
    placement = cloud.cloud
    placement.inventory(gpus[0], {'PGPU': 2})
    other = str(uuid.uuid4())
    placement.aggregates(root, [])
    placement.aggregates(gpus[1], [other])
    placement.traits(gpus[0], [])
    placement.call('DELETE', '/resource_providers/%s' % gpus[1])
    placement.aggregates(gpus[0], [other])
    before = providers.get(ctx, gpus[0]).generation

    rows = _rows(cloud.sync())
    assert rows['providers removed'] == 1
    assert rows['inventory changes'] == 1
    assert inventories.get_all(ctx, gpus[0])[1]['GPU']['total'] == 2
    assert inventories.get_all(ctx, gpus[0])[1]['GPU']['reserved'] == 0
    with pytest.raises(device_errors.ResourceProviderNotFound):
        providers.get(ctx, gpus[1])
    assert aggregates.get_for_provider(ctx, root)[1] == []
    assert aggregates.get_for_provider(ctx, gpus[0])[1] == [other]
    assert traits.get_for_provider(ctx, gpus[0])[1] == []
    # As cyquota's own writes do: one bump per changed provider.
    assert providers.get(ctx, gpus[0]).generation == before + 1


def test_other_consumers_usage_reduces_what_cyquota_offers(cloud, node,
                                                           ctx):
    _root, gpus, _agg = node
    server = str(uuid.uuid4())
    cloud.cloud.allocate(server, {gpus[0]: {'PGPU': 3},
                                  gpus[1]: {'PGPU': 1}}, PROJECT, USER)
    rows = _rows(cloud.sync())
    assert rows['usage changes'] == 2
    assert allocations.get_for_provider(ctx, gpus[0])[1] == {
        server: {'resources': {'GPU': 3}}}

    def offered():
        found = candidates.search(ctx, request.from_params(
            {'resources': 'GPU:2'}))
        return {rp for areq in found['allocation_requests']
                for rp in areq['allocations']}
    assert offered() == {gpus[1]}
    cloud.cloud.call('DELETE', '/allocations/%s' % server)
    assert _rows(cloud.sync())['usage changes'] == 2
    assert offered() == set(gpus)


def test_a_held_provider_that_vanishes_is_kept_and_marked(cloud, node, ctx,
                                                          caplog):
    _root, gpus, _agg = node
    cloud.sync()
    held = allocations.claim(ctx, str(uuid.uuid4()), PROJECT,
                             request.from_params({'resources': 'GPU:3'}))
    (taken,) = held
    placement = cloud.cloud
    placement.call('DELETE', '/resource_providers/%s' % taken)
    counted = metrics.MIRROR_KEPT.labels('held')._value.get()
    with caplog.at_level(logging.WARNING, logger='cyquota.cloud.mirror'):
        result = cloud.sync()
    assert result.kept == {taken}
    assert _rows(result)['providers removed'] == 0
    assert providers.get(ctx, taken).uuid == taken
    with db_api.reader(ctx) as session:
        assert session.execute(sa.select(_kept.c.reason)).scalars().all() == [
            'held by a live lease or reservation']
    assert metrics.MIRROR_KEPT.labels('held')._value.get() == counted + 1
    assert [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING] == [
        'Placement mirror: provider %s is gone from Placement but kept: '
        'held by a live lease or reservation' % taken]
    # Once nothing holds it, the next sync removes it.
    allocations.free(ctx, list(allocations.get_for_provider(
        ctx, taken)[1])[0])
    assert _rows(cloud.sync())['providers removed'] == 1
    with pytest.raises(device_errors.ResourceProviderNotFound):
        providers.get(ctx, taken)


def test_a_kept_provider_takes_nothing_new(cloud, node, ctx):
    _root, gpus, _agg = node
    cloud.sync()
    consumer = str(uuid.uuid4())
    allocations.claim(ctx, consumer, PROJECT, request.from_params(
        {'resources': 'GPU:1'}))
    (taken,) = allocations.get_for_consumer(ctx, consumer)['allocations']
    cloud.cloud.call('DELETE', '/resource_providers/%s' % taken)
    assert cloud.sync().kept == {taken}

    def offered():
        found = candidates.search(ctx, request.from_params(
            {'resources': 'GPU:1'}))
        return {rp for areq in found['allocation_requests']
                for rp in areq['allocations']}
    # Its 2 free GPUs are not offered; what it holds stays held.
    assert offered() == set(gpus) - {taken}
    assert allocations.get_for_provider(ctx, taken)[1] == {
        consumer: {'resources': {'GPU': 1}}}


def test_inventory_shrunk_under_holdings_is_applied_and_logged(cloud, node,
                                                               ctx, caplog):
    _root, gpus, _agg = node
    cloud.sync()
    consumer = str(uuid.uuid4())
    allocations.claim(ctx, consumer, PROJECT, request.from_params(
        {'resources': 'GPU:3'}))
    (taken,) = allocations.get_for_consumer(ctx, consumer)['allocations']
    cloud.cloud.inventory(taken, {'PGPU': 2})
    with caplog.at_level(logging.WARNING, logger='cyquota.cloud.mirror'):
        result = cloud.sync()
    assert result.overcommitted == [(taken, 'GPU', 3, 2)]
    assert inventories.get_all(ctx, taken)[1]['GPU']['total'] == 2
    assert 'now offers 2 GPU, less than the 3 held' in caplog.text


def test_placement_stopped_is_survived_and_caught_up(cloud, node, ctx,
                                                     caplog):
    _root, gpus, _agg = node
    # The periodic sync reads cyquota's own configuration.
    CONF.set_override('sync_interval', 1, 'placement')
    CONF.set_override('class_map', {'GPU': 'PGPU'}, 'placement')
    try:
        assert mirror.periodic_sync(ctx, 'c1', cloud.client) is not None
        synced_at = mirror_state.read(ctx)['synced_at']
        with db_api.writer(ctx) as session:
            # The round claimed a while ago, as after an interval.
            session.execute(mirror_models.MirrorState.__table__.update()
                            .values(claimed_at=synced_at
                                    - datetime.timedelta(seconds=5)))
        with cloud.cloud.server.stopped():
            with caplog.at_level(logging.WARNING,
                                 logger='cyquota.cloud.mirror'):
                assert mirror.periodic_sync(ctx, 'c1', cloud.client) is None
            # The copy stays and is served.
            assert {p.uuid for p in providers.get_all(ctx)} >= set(gpus)
        warnings = [r for r in caplog.records
                    if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert warnings[0].exc_info is None
        message = warnings[0].getMessage()
        assert message.startswith(
            'Placement mirror not updated, serving the last copy (synced ')
        assert 'ConnectFailure' in message and '\n' not in message
        state = mirror_state.read(ctx)
        assert state['synced_at'] == synced_at
        assert state['last_error'] and state['age'] > 0
        cloud.cloud.inventory(gpus[0], {'PGPU': 8})
        assert _rows(cloud.sync())['inventory changes'] == 1
        assert mirror_state.read(ctx)['synced_at'] > synced_at
        assert mirror_state.read(ctx)['last_error'] is None
    finally:
        CONF.clear_override('sync_interval', 'placement')
        CONF.clear_override('class_map', 'placement')


def test_a_sync_without_change_writes_nothing(cloud, node, ctx):
    _root, gpus, _agg = node
    cloud.cloud.allocate(str(uuid.uuid4()), {gpus[0]: {'PGPU': 1}},
                         PROJECT, USER)
    cloud.sync()
    generations = {p.uuid: p.generation for p in providers.get_all(ctx)}
    with fixtures.statements_sent() as sent:
        result = cloud.sync()
    writes = [s for s in sent if not s.lstrip().upper().startswith(
        ('SELECT', 'SAVEPOINT', 'RELEASE'))]
    assert not result.changes
    assert {p.uuid: p.generation
            for p in providers.get_all(ctx)} == generations
    # Only the time of the sync.
    assert [w for w in writes if 'placement_mirror' not in w] == []


def test_one_conductor_per_round(cloud, node, ctx):
    CONF.set_override('sync_interval', 60, 'placement')
    try:
        won = []
        barrier = threading.Barrier(4)

        def conductor(host):
            barrier.wait()
            if mirror_state.claim_round(ctx.__class__(), host, 60):
                won.append(host)
        threads = [threading.Thread(target=conductor, args=('c%d' % i,))
                   for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1
        assert not mirror_state.claim_round(ctx, 'late', 60)
    finally:
        CONF.clear_override('sync_interval', 'placement')


def test_placement_errors_are_one_line(cloud, tmp_path, ctx):
    conf = _conf(tmp_path, 'http://127.0.0.1:9')
    with pytest.raises(placement_errors.PlacementUnreachable) as caught:
        mirror.sync(ctx, conf=conf)
    assert '\n' not in str(caught.value)


def test_the_age_shows_in_metrics_and_healthcheck(cloud, node, ctx):
    from cyquota.api import healthcheck
    from cyquota.api import mirror_gauges as mirror_metrics

    def gauges():
        return {family.name: family.samples[0].value
                for family in mirror_metrics.MirrorCollector().collect()}
    assert gauges() == {}
    CONF.set_override('source', 'placement', 'placement')
    try:
        assert gauges() == {'cyquota_placement_mirror_age_seconds': -1,
                            'cyquota_placement_mirror_kept': 0}
        cloud.sync()
        with db_api.writer(ctx) as session:
            session.execute(mirror_models.MirrorState.__table__.update()
                            .values(synced_at=mirror_state.read(ctx)[
                                'synced_at'] - datetime.timedelta(
                                    seconds=90)))
        mirror_state.failed(ctx, 'Placement GET /resource_providers: '
                                 'ConnectFailure: refused')
        assert 90 <= gauges()['cyquota_placement_mirror_age_seconds'] < 120
        result = healthcheck.DatabaseHealthcheck(
            CONF, {}).healthcheck(None)
        assert result.available and result.reason == 'Database OK'
        assert result.details == (
            'Placement mirror: last synced 90 s ago; last sync failed: '
            'Placement GET /resource_providers: ConnectFailure: refused')
    finally:
        CONF.clear_override('source', 'placement')
