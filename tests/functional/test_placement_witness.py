"""The cloud's Placement as the ledger's witness: ``cyquota-manage quota
check --against-placement`` and ``quota sync --from-placement`` as an
operator runs them (with a config file; its ``main`` in this process but
where the test's own options would win over the file's: a real process),
against a real Placement (the ``placement`` fixture), on PostgreSQL and
MariaDB."""

import datetime
import logging
import subprocess
import sys
import time

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from prometheus_client.parser import text_string_to_metric_families
import pytest
import sqlalchemy as sa

from cyquota.api import metrics_page
from cyquota.cloud import lease_writeback
from cyquota.cloud import mirror
from cyquota.cloud import placement_client
from cyquota.cloud import witness
from cyquota.cloud import witness_rounds
from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota.conf import placement as placement_conf
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import leases
from cyquota import quota
from servers import placement_server
from tests import commands

pytestmark = pytest.mark.timeout(300)

Q = quota.QUOTAS
A = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
B = 'b1b2c3d4e5f60718293a4b5c6d7e8f90'
USER = '2f1c0d9e8b7a46f5a3c2b1d0e9f8a7b6'
VM1, VM2, VM3 = ('%08d-0000-4000-8000-000000000000' % n for n in (1, 2, 3))
LEASE = '%08d-0000-4000-8000-00000000000a' % 4
#: noauth2 makes the user of a token starting so an admin; one of these
#: tests' own, so that no log line shows it by chance.
TOKEN = 'admin:cyquota-witness-test'


@pytest.fixture
def config(tmp_path, placement, db_url):
    """The operator's configuration file: the ledger's database and the
    options that reach Placement (source stays local: the witness needs
    only the client's options)."""
    placement_server.empty(placement)
    return _config(tmp_path, db_url, placement.url)


def _config(tmp_path, db_url, url, more=''):
    path = tmp_path / 'cyquota.conf'
    path.write_text(
        '[database]\nconnection = %s\n[placement]\nclass_map = GPU:PGPU\n'
        'auth_type = admin_token\nendpoint = %s\ntoken = %s\ntimeout = 5\n%s'
        % (db_url, url, placement_server.TOKEN, more))
    return path


def _manage(config, *args):
    return subprocess.run(
        [sys.executable, '-m', 'cyquota.cmd.manage', '--config-file',
         str(config), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def manage(config):
    return lambda *args: commands.manage(config, *args)


@pytest.fixture
def devices(placement):
    """A compute node with a GPU device (PGPU 4) and an FPGA device
    (FPGA 4)."""
    node = placement.provider(name='node-1')
    gpu = placement.provider(name='node-1-gpu', parent=node)
    fpga = placement.provider(name='node-1-fpga', parent=node)
    placement.inventory(gpu, {'PGPU': 4})
    placement.inventory(fpga, {'FPGA': 4})
    return gpu, fpga


def _rows(table):
    """The cells of a printed table's body rows."""
    return [[cell.strip() for cell in line.strip('|').split('|')]
            for line in table.splitlines()
            if line.startswith('|') and not line.startswith('| Project')]


def _attach(ctx, project, consumer, deltas):
    """What an accelerator agent does: reserve, then commit."""
    Q.commit(ctx, project, Q.reserve(ctx, project, deltas,
                                     consumer_id=consumer))


def _books():
    """The ledger's rows that a repair may change."""
    tables = (models.QuotaUsage.__table__, models.ConsumerUsage.__table__,
              models.DriftEvent.__table__)
    with db_api.get_engine().connect() as conn:
        return [sorted(map(tuple, conn.execute(sa.select(table))))
                for table in tables]


def _adopted():
    events = models.DriftEvent.__table__
    with db_api.get_engine().connect() as conn:
        return conn.execute(
            sa.select(events.c.project_id, events.c.resource,
                      events.c.consumer_id, events.c.requested,
                      events.c.detail, events.c.resolved_at)
            .where(events.c.kind == 'placement_adopted')
            .order_by(events.c.id)).all()


def test_check_and_sync_against_placement(manage, config, placement,
                                          devices, ctx):
    gpu, fpga = devices
    # Agreement: the agent's attach is in both; a lease's allocation in
    # Placement is no ordinary use.
    _attach(ctx, A, VM1, {'GPU': 1})
    placement.allocate(VM1, {gpu: {'PGPU': 1}}, A, USER)
    placement.allocate(LEASE, {gpu: {'PGPU': 2}}, A, USER,
                       consumer_type=placement_client.LEASE_CONSUMER_TYPE)
    agreed = manage('quota', 'check', '--against-placement')
    assert (agreed.returncode, agreed.stdout) == (
        0, 'No difference from Placement.\n'), agreed.stderr

    # An FPGA allocated in Placement that the ledger never saw (B's
    # VM2), and a GPU the ledger has that Placement lacks (A's VM3).
    placement.allocate(VM2, {fpga: {'FPGA': 1}}, B, USER)
    _attach(ctx, A, VM3, {'GPU': 1})
    differs = manage('quota', 'check', '--against-placement')
    assert differs.returncode == 1, differs.stderr
    assert 'Use that differs from Placement' in differs.stdout
    assert 'Ledger used' in differs.stdout
    assert _rows(differs.stdout) == [[A, 'GPU', '2', '1', '-1'],
                                     [B, 'FPGA', '0', '1', '+1']]
    assert ('quota check: 3/3 providers read from Placement (100%)'
            in differs.stderr)
    one = manage('quota', 'check', '--against-placement', '--project', B)
    assert one.returncode == 1
    assert _rows(one.stdout) == [[B, 'FPGA', '0', '1', '+1']]
    # The plain check trusts the ledger's own records: no drift there.
    assert not Q.check_drift(ctx)

    books = _books()
    with placement.server.stopped():
        for command in (('check', '--against-placement'),
                        ('sync', '--from-placement')):
            away = manage('quota', *command)
            assert away.returncode == 1
            assert away.stdout == ''
            assert away.stderr.startswith('quota %s: Placement '
                                          % command[0])
            assert len(away.stderr.splitlines()) == 1, away.stderr
    assert _books() == books

    repaired = manage('quota', 'sync', '--from-placement')
    assert repaired.returncode == 0, repaired.stderr
    assert _rows(repaired.stdout) == [
        [A, 'GPU', 'consumer %s' % VM3, '1', '0'],
        [B, 'FPGA', 'consumer %s' % VM2, '0', '1'],
        [A, 'GPU', 'used', '2', '1'],
        [B, 'FPGA', 'used', '0', '1']]
    assert ('4 count(s) repaired, 0 drift event(s) acknowledged.'
            in repaired.stdout)
    assert ('Quota repaired from Placement: project %s, GPU, consumer %s: '
            '1 -> 0' % (A, VM3)) in repaired.stderr
    adopted = _adopted()
    assert [row[:4] for row in adopted] == [
        (A, 'GPU', VM3, -1), (B, 'FPGA', VM2, 1), (A, 'GPU', None, -1),
        (B, 'FPGA', None, 1)]
    assert adopted[0].detail == 'consumer %s 1 -> 0, from Placement' % VM3
    assert all(row.resolved_at is not None for row in adopted)

    for command in (('check', '--against-placement'), ('check',)):
        after = manage('quota', *command)
        assert after.returncode == 0, after.stdout + after.stderr
    assert Q.repair(ctx, placement=_witness(config, []).holdings()) == (
        [], 0)
    assert len(_adopted()) == 4
    usage = Q.get_project_usage(ctx, B)['FPGA']
    assert (usage['used'], usage['reserved']) == (1, 0)


def test_an_attach_in_progress_is_left_alone(manage, placement, devices,
                                             ctx):
    gpu, _ = devices
    # Nova has allocated VM1's GPU; the agent's reserve is not committed.
    Q.reserve(ctx, A, {'GPU': 1}, consumer_id=VM1)
    placement.allocate(VM1, {gpu: {'PGPU': 1}}, A, USER)
    assert manage('quota', 'check', '--against-placement').returncode == 1
    repaired = manage('quota', 'sync', '--from-placement')
    assert (repaired.returncode, _rows(repaired.stdout)) == (0, [])
    Q.commit(ctx, A, [r['uuid'] for r in Q.list_reservations(ctx, A)])
    assert manage('quota', 'check', '--against-placement').returncode == 0


def _witness(config, seen):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf(['--config-file', str(config)], project='cyquota',
         default_config_files=[])
    return witness.Witness.from_conf(
        conf, progress=lambda what, done, total: seen.append((what, done)))


def test_placement_is_asked_only_about_consumers_the_ledger_does_not_know(
        config, placement, devices, ctx):
    gpu, fpga = devices
    _attach(ctx, A, VM1, {'GPU': 1})
    placement.allocate(VM1, {gpu: {'PGPU': 1}}, A, USER)
    placement.allocate(VM2, {fpga: {'FPGA': 2}}, B, USER)
    placement.allocate(LEASE, {gpu: {'PGPU': 1}}, B, USER,
                       consumer_type=placement_client.LEASE_CONSUMER_TYPE)
    seen = []
    found = witness.check(ctx, Q, _witness(config, seen))
    assert found == [witness.Difference(B, 'FPGA', 'used', 0, 2)]
    # Three providers, the two consumers the ledger does not know, two
    # projects.
    assert [what for what, _ in seen] == (
        ['providers'] * 3 + ['consumers'] * 2 + ['projects'] * 2)
    assert witness.check(ctx, Q, _witness(config, []), leases=True) == [
        witness.Difference(B, 'FPGA', 'used', 0, 2),
        witness.Difference(B, 'GPU', 'leased', 0, 1)]
    assert _witness(config, []).holdings(B) == {B: {('FPGA', VM2): 2}}


@pytest.fixture
def leases_written(placement, backend, ctx):
    """cyquota in this process writing leases to the fixture's Placement
    (emptied), with a compute node of one GPU device (PGPU 4) mirrored."""
    placement_server.empty(placement)
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='placement')
    settings = dict(source='placement', write_leases=True,
                    class_map={'GPU': 'PGPU'}, auth_type='admin_token',
                    endpoint=placement.url, token=TOKEN, timeout=5)
    for name, value in settings.items():
        CONF.set_override(name, value, 'placement')
    lease_writeback.reset()
    leases.LEASES.reset()
    node = placement.provider(name='node-1')
    placement.inventory(placement.provider(name='node-1-gpu', parent=node),
                        {'PGPU': 4})
    mirror.sync(ctx)
    yield placement
    lease_writeback.reset()
    for name in settings:
        CONF.clear_override(name, 'placement')


def test_a_lease_written_to_placement_is_its_leased_count(
        leases_written, ctx, tmp_path, db_url):
    user = cyquota_context.RequestContext(user_id=USER, project_id=A)
    end = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
        hours=2)
    made = leases.LEASES.create(user, A, {
        'end_date': end.isoformat(),
        'reservations': [{'resource_type': 'accelerator:GPU', 'amount': 3}]})
    assert made['status'] == 'ACTIVE'
    assert Q.usage_counts(ctx) == {(A, 'GPU'): {'used': 3, 'leased': 3}}
    reader = witness.Witness.from_conf()
    # The lease is in both, as a lease: no ordinary use, nothing to adopt.
    assert witness.check(ctx, Q, reader, leases=True) == []
    assert reader.holdings() == {}
    assert Q.repair(ctx, placement=reader.holdings()) == ([], 0)

    # Placement loses the lease's allocation: leased differs, used not.
    leases_written.call('DELETE', '/allocations/%s' % made['id'])
    assert witness.check(ctx, Q, reader, leases=True) == [
        witness.Difference(A, 'GPU', 'leased', 3, 0)]
    assert witness.check(ctx, Q, reader) == []
    config = _config(tmp_path, db_url, leases_written.url,
                     'source = placement\nwrite_leases = true\n')
    differs = _manage(config, 'quota', 'check', '--against-placement')
    assert differs.returncode == 1, differs.stderr
    assert 'Leases that differ from Placement' in differs.stdout
    assert 'Use that differs' not in differs.stdout
    assert _rows(differs.stdout) == [[A, 'GPU', '3', '0', '-3']]


@pytest.fixture
def witnessing(placement, backend):
    """cyquota in this process in Placement mode, reading the fixture's
    Placement (emptied), its periodic witness every second."""
    placement_server.empty(placement)
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='placement')
    settings = dict(source='placement', class_map={'GPU': 'PGPU'},
                    auth_type='admin_token', endpoint=placement.url,
                    token=TOKEN, timeout=5, witness_interval=1)
    for name, value in settings.items():
        CONF.set_override(name, value, 'placement')
    yield placement
    for name in settings:
        CONF.clear_override(name, 'placement')


#: The witness's last-run gauge, as ``_witness_gauges`` keys it.
LAST_RUN = ('cyquota_placement_witness_last_run_timestamp_seconds', ())


def _witness_round(caplog):
    """One run of the conductor's periodic witness, once its interval
    has passed; returns its WARNING lines and the drift gauges' samples
    that a scrape of ``GET /metrics`` shows then."""
    [task] = [task for task, _, _
              in conductor_service._periodic_tasks('functional-conductor')
              if task.__name__ == 'check_placement_witness']
    time.sleep(CONF.placement.witness_interval)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger='cyquota'):
        task()
    return [record.getMessage() for record in caplog.records
            if record.levelno == logging.WARNING], _witness_gauges()


def _witness_gauges():
    """``{(name, labels): value}`` of the witness's gauges in a scrape of
    ``GET /metrics``."""
    return {(sample.name, tuple(sorted(sample.labels.items()))):
            sample.value
            for family in text_string_to_metric_families(
                metrics_page.render().decode())
            for sample in family.samples
            if sample.name.startswith('cyquota_placement_witness')
            or sample.name == 'cyquota_placement_drift'}


def _drift(samples, resource):
    return samples[('cyquota_placement_drift',
                    (('field', 'used'), ('resource', resource)))]


def test_the_conductor_witnesses_placement_and_never_repairs(
        witnessing, tmp_path, db_url, ctx, caplog):
    node = witnessing.provider(name='node-1')
    gpu = witnessing.provider(name='node-1-gpu', parent=node)
    witnessing.inventory(gpu, {'PGPU': 4})
    _attach(ctx, A, VM1, {'GPU': 1})
    witnessing.allocate(VM1, {gpu: {'PGPU': 1}}, A, USER)
    # An allocation in Placement that the ledger never saw.
    witnessing.allocate(VM2, {gpu: {'PGPU': 2}}, B, USER)
    assert _witness_gauges() == {LAST_RUN: 0}

    warnings, samples = _witness_round(caplog)
    assert warnings == ['Placement witness: project %s, resource GPU, used: '
                        'ledger 0, Placement 2' % B]
    assert (_drift(samples, 'GPU'), _drift(samples, 'FPGA')) == (1, 0)
    ran_at = samples[LAST_RUN]
    assert abs(ran_at - time.time()) < 60
    # Another conductor in the same round compares nothing.
    CONF.set_override('witness_interval', 600, 'placement')
    assert witness_rounds.periodic_check(ctx, 'another-conductor') is None
    CONF.set_override('witness_interval', 1, 'placement')
    # Seen, not repaired.
    assert Q.get_project_usage(ctx, B)['GPU']['used'] == 0
    again, samples = _witness_round(caplog)
    assert again == warnings
    ran_at = samples[LAST_RUN]
    # Placement away: one line, and the last run's record stays.
    with witnessing.server.stopped():
        away, samples = _witness_round(caplog)
    assert len(away) == 1 and away[0].startswith(
        'Placement witness not run: Placement '), away
    assert _drift(samples, 'GPU') == 1
    assert samples[LAST_RUN] == ran_at

    repaired = _manage(_config(tmp_path, db_url, witnessing.url), 'quota',
                       'sync', '--from-placement')
    assert repaired.returncode == 0, repaired.stderr
    warnings, samples = _witness_round(caplog)
    assert warnings == []
    assert (_drift(samples, 'GPU'), _drift(samples, 'FPGA')) == (0, 0)
    assert samples[LAST_RUN] > ran_at
