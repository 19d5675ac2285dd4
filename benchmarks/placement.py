"""Placement benchmark: the mirror of the cloud's Placement, and the hot
paths in Placement mode beside local mode.

A real Placement (``openstack-placement``, started as the functional tests
start it: its own virtualenv and SQLite database, noauth2, 127.0.0.1) gets
a cloud of 1,000 devices with four classes each under 100 compute nodes
(``placement_cloud``), written once per run over HTTP and shared by the
backends.

On every backend, in a throw-away database, ``mirror.sync`` (a client of
its own each time, as the conductor's) copies it three times: the first,
full sync; one that finds nothing new; one after ten inventories changed.
Each is timed, and Placement's request log counts the HTTP requests it
made (Placement offers no paging: one request per provider per kind).

Then the hot paths (``placement_modes``): ``QUOTAS.reserve``,
``QUOTAS.commit``, a reserve that claims a device by ``member_of`` and
``LEASES.create``, in Placement mode (``[placement] source = placement``,
on the database the syncs filled) and in local mode (a second throw-away
database of the same server with the same devices entered through
cyquota's device model), each mode a process of its own, the two taking
turns call kind by call kind. The target: Placement mode within 1.1x of
local mode, since the mirror is local data and the hot paths never call
Placement.
"""

import contextlib
import os
import tempfile
import time

from oslo_config import cfg
import pytest

import benchmarks
from benchmarks import placement_cloud
from benchmarks import placement_modes
from benchmarks import report
from cyquota.cloud import mirror
from cyquota.conf import CONF
from cyquota.conf import placement as placement_conf
from cyquota import context as cyquota_context
from servers import placement_server

TITLE = ("Placement mode: mirror syncs of the cloud's Placement; hot paths "
         "beside local mode")
COLUMNS = [
    ('backend', 'backend', '{}'),
    ('measurement', 'measurement', '{}'),
    ('seconds', 'seconds', '{:.2f}'),
    ('requests', 'HTTP requests', '{}'),
    ('of_full', '/ full sync', '{:.2f}'),
    ('local_p50', 'local p50 ms', '{:.2f}'),
    ('placement_p50', 'placement p50 ms', '{:.2f}'),
    ('ratio', 'placement/local', '{:.2f}'),
    ('check', 'check', '{}'),
]
#: Compute nodes of the cloud (``--quick``: 1), each with
#: ``placement_cloud.DEVICES_PER_NODE`` devices.
NODES = 100
CHANGED = 10
#: "A small fraction": a sync that finds nothing new at most this part of
#: the full one.
SYNC_TARGET = 0.2
#: Placement mode's p50 over local mode's, at most.
HOT_TARGET = 1.1
BUILD = 'Placement: the cloud written over HTTP'
FULL, UNCHANGED, SMALL = ('sync: first (full)', 'sync: nothing new',
                          'sync: %d inventories changed' % CHANGED)


def run(args, progress):
    """Build the cloud once, then measure every backend in
    ``args.backends``."""
    nodes = 1 if args.quick else NODES
    rounds, calls = (2, 2) if args.quick else (25, 4)
    CONF.set_override('resources', placement_cloud.EXTRA_RESOURCES, 'quota')
    try:
        with _placement() as (server, why):
            if server is None:
                return [dict(backend='-', measurement=BUILD, failed=True,
                             check=why)]
            cloud = placement_cloud.layout(nodes)
            rows = [_build(server, cloud, progress)]
            with tempfile.TemporaryDirectory(prefix='cyquota-bench-') as tmp:
                conf = _mirror_conf(tmp, server.url)
                for backend, url in benchmarks.databases(
                        'placement', args.backends, progress):
                    if url is None:
                        rows.append(dict(benchmarks.UNREACHABLE,
                                         backend=backend, measurement=FULL))
                        continue
                    rows.extend(_syncs(backend, server, cloud, conf,
                                       progress))
                    rows.extend(_hot_paths(backend, url, cloud, rounds,
                                           calls, progress))
            return rows
    finally:
        CONF.clear_override('resources', 'quota')


@contextlib.contextmanager
def _placement():
    """``(a started Placement, None)``, or ``(None, why)`` when it cannot
    be built or started (the launcher's skip or failure)."""
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(placement_server.running())
        except (Exception, pytest.skip.Exception,
                pytest.fail.Exception) as error:
            yield None, 'Placement not started: %s' % (
                ' '.join(str(error).split())[:200])
            return
        yield server, None


def _requests_served(server):
    """How many requests Placement has answered: its request log has a
    line for each."""
    with open(server.path / 'placement.log') as log:
        return sum('placement.requestlog' in line for line in log)


def _build(server, cloud, progress):
    progress.step('placement: writing %s providers (%d nodes, %d devices) '
                  'to Placement on %d threads' % (
                      format(cloud.providers, ','), len(cloud.nodes),
                      len(cloud.devices), placement_cloud.THREADS))
    writer = placement_cloud.PlacementWriter(server.url,
                                             placement_server.TOKEN)
    before, started = _requests_served(server), time.perf_counter()
    writer.write(cloud, lambda done: progress.step(
        'placement: %d of %d nodes written' % (done, len(cloud.nodes))))
    return dict(backend='-', measurement=BUILD,
                seconds=time.perf_counter() - started,
                requests=_requests_served(server) - before,
                providers=cloud.providers, devices=len(cloud.devices),
                check='ok')


def _mirror_conf(directory, url):
    """The ``[placement]`` options of a cyquota that mirrors ``url``."""
    path = os.path.join(directory, 'cyquota.conf')
    with open(path, 'w') as out:
        out.write('[placement]\nsource = placement\nclass_map = %s\n'
                  'auth_type = admin_token\nendpoint = %s\ntoken = %s\n'
                  % (placement_cloud.CLASS_MAP, url, placement_server.TOKEN))
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf(['--config-file', path], project='cyquota',
         default_config_files=[])
    return conf


# -- syncs -------------------------------------------------------------------

def _syncs(backend, server, cloud, conf, progress):
    ctx = cyquota_context.get_admin_context()
    nothing = dict.fromkeys(cloud.expected_full_sync(), 0)
    writer = placement_cloud.PlacementWriter(server.url,
                                             placement_server.TOKEN)
    rows = []
    for measurement, expected in (
            (FULL, cloud.expected_full_sync()), (UNCHANGED, nothing),
            (SMALL, dict(nothing, **{'inventory changes': CHANGED}))):
        if measurement == SMALL:
            writer.change_inventories(cloud, CHANGED)
        progress.step('placement: %s: %s' % (backend, measurement))
        before, started = _requests_served(server), time.perf_counter()
        result = mirror.sync(ctx, conf=conf)
        seconds = time.perf_counter() - started
        found = dict(result.rows())
        rows.append(dict(
            backend=backend, measurement=measurement, seconds=seconds,
            requests=_requests_served(server) - before,
            providers=cloud.providers, of_full=seconds / (
                rows[0]['seconds'] if rows else seconds),
            check='ok' if found == expected else 'changes: %s' % ', '.join(
                '%s %d' % item for item in found.items() if item[1]),
            failed=found != expected))
    return rows


# -- hot paths ---------------------------------------------------------------

def _hot_paths(backend, mirrored, cloud, rounds, calls, progress):
    """The hot paths on the database the syncs filled and on a second one
    with the same devices entered through cyquota's device model."""
    with benchmarks.throwaway_database(backend) as local:
        progress.step('placement: %s: the same devices through cyquota\'s '
                      'device model' % backend)
        placement_cloud.enter_locally(cyquota_context.get_admin_context(),
                                      cloud)
        return placement_modes.measure(
            backend, {placement_modes.LOCAL: local,
                      placement_modes.PLACEMENT: mirrored},
            cloud.aggregates[0], len(placement_cloud.SERVER_HOLDS)
            * len(cloud.servers), rounds, calls, progress)


# -- report ------------------------------------------------------------------

def summary(rows):
    """The two targets, per backend, met or NOT met, and what a sync
    asks Placement."""
    lines = []
    for row in rows:
        if row['measurement'] == BUILD and 'seconds' in row:
            lines.append(
                'the cloud: %s providers (%s devices of 4 classes), written '
                'in %.0f s with %d requests' % (
                    format(row['providers'], ','),
                    format(row['devices'], ','),
                    row['seconds'], row['requests']))
        elif 'seconds' not in row and 'local_p50' not in row:
            lines.append('%s: no measurement (%s)' % (row['backend'],
                                                      row['check']))
    backends = list(dict.fromkeys(r['backend'] for r in rows
                                  if 'of_full' in r or 'ratio' in r))
    lines.append('target: a sync that finds nothing new at most %.1f of a '
                 'full sync' % SYNC_TARGET)
    for backend in backends:
        sync = {r['measurement']: r for r in rows if r['backend'] == backend
                and 'of_full' in r}
        if UNCHANGED in sync:
            full, unchanged = sync[FULL], sync[UNCHANGED]
            lines.append(
                '  %s: %.2f s (%d HTTP requests) of %.2f s (%d requests, '
                '%.1f per provider) = %.2f: %s' % (
                    backend, unchanged['seconds'], unchanged['requests'],
                    full['seconds'], full['requests'],
                    full['requests'] / full['providers'],
                    unchanged['of_full'],
                    _verdict(unchanged['of_full'] <= SYNC_TARGET)))
    lines.append('target: Placement mode p50 within %.1fx of local mode'
                 % HOT_TARGET)
    for backend in backends:
        hot = [r for r in rows if r['backend'] == backend and 'ratio' in r]
        if hot:
            lines.append('  %s: %s' % (backend, ', '.join(
                '%s %.2fx %s' % (r['measurement'], r['ratio'],
                                 _verdict(r['ratio'] <= HOT_TARGET))
                for r in hot)))
    return lines


def _verdict(met):
    return 'met' if met else 'NOT met'


_SHORT = dict(zip(placement_modes.HOT_PATHS, (
    'reserve', 'commit', 'device claim', 'lease create')))


def plot(rows, ax):
    """p50 of each hot path in both modes, grouped by backend; beside it
    the seconds of each sync."""
    hot = [r for r in rows if 'ratio' in r]
    positions = range(len(hot))
    for offset, mode in ((-0.2, placement_modes.LOCAL),
                         (0.2, placement_modes.PLACEMENT)):
        ax.bar([p + offset for p in positions],
               [r[mode + '_p50'] for r in hot], width=0.4,
               label='%s mode p50' % mode)
    ax.set_xticks(list(positions), ['%s\n%s' % (
        r['backend'], _SHORT[r['measurement']]) for r in hot],
        rotation=60, ha='right', fontsize=6)
    ax.set_ylabel('hot path p50, ms')
    ax.legend(fontsize=7)
    side = report.side_axes(ax, '35%', pad=0.8, widen=False)
    syncs = [r for r in rows if 'of_full' in r]
    backends = list(dict.fromkeys(r['backend'] for r in syncs))
    for number, (kind, label) in enumerate((
            (FULL, 'full'), (UNCHANGED, 'nothing new'),
            (SMALL, '%d changed' % CHANGED))):
        cells = {r['backend']: r['seconds'] for r in syncs
                 if r['measurement'] == kind}
        side.bar([i + (number - 1) * 0.27 for i in range(len(backends))],
                 [cells.get(backend, 0) for backend in backends],
                 width=0.27, label=label)
    side.set_xticks(list(range(len(backends))), backends, fontsize=7)
    side.set_ylabel('sync, s')
    side.legend(fontsize=6)
