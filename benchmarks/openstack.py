"""cyquota inside a real OpenStack: the test bed of
``servers/openstack_bed`` (Keystone, Placement, Nova, Cyborg and
cyquota with its bind filter in Cyborg's pipeline), measured on one bed:

* the bed's start, phase by phase (seconds since the start; the
  virtualenvs come from the cache, ``~/.cache/cyquota``);
* boots of a server with one FPGA (a flavor with a device profile), from
  ``POST /servers`` until Nova shows it ACTIVE (polled every 0.5 s), and
  its delete until Nova no longer shows it: the first server of the bed
  (cold: every service's first boot) and warm boots, first through the
  bed's cyborg-api with the filter, then through a cyborg-api without it
  restarted on the same port (its first boot is warm everywhere but in
  cyborg-api, so it stands beside the cold one only as a reference);
* the filter's cost on the bind ``PATCH`` Nova sends, the same bind
  through a cyborg-api with and without the filter, taking turns
  (``benchmarks.openstack_bind``), and where its time goes;
* the resident memory of each process (its process group), with both
  cyborg-apis running.

The target: the bind ``PATCH`` with the filter at most 1.1 times the same
``PATCH`` without it, medians of the same run.
"""

import statistics
import time

from benchmarks import openstack_bind
from servers.openstack_bed import bed as openstack_bed

TITLE = ('OpenStack: the bed\'s start, boots with and without the bind '
         'filter, the filter\'s cost on a bind PATCH, memory')
COLUMNS = [
    ('part', 'part', '{}'),
    ('what', 'what', '{}'),
    ('unit', 'unit', '{}'),
    ('value', 'with filter', '{:,.1f}'),
    ('plain', 'without filter', '{:,.1f}'),
    ('ratio', 'with/without', '{:.2f}'),
]
#: The target of the bind PATCH with the filter over without it.
TARGET = 1.1
MIB = 2 ** 20


def run(args, progress):
    """Every row, on one bed started here and torn down after."""
    warm, rounds = (1, 5) if args.quick else (3, 40)
    progress.step('openstack: starting the bed (cyquota filter in '
                  "Cyborg's pipeline)")
    bed = openstack_bed.Bed(cyquota_filter=True)
    try:
        bed.start()
        # "configured in <directory>": the directory is this run's.
        rows = [dict(part='bed start', what=phase.split(' in /')[0],
                     unit='s since start', value=seconds)
                for phase, seconds in bed.phases]
        device_profile = bed.device_profile()
        flavor = bed.flavor(device_profile)
        progress.step('openstack: boots with the filter (1 cold, %d warm)'
                      % warm)
        with_filter = _boots(bed, flavor, warm, progress)
        bind_rows, rss = openstack_bind.measure(bed, device_profile, rounds,
                                                progress)
        rows += bind_rows + _memory(rss)
        progress.step('openstack: cyborg-api restarted without the filter')
        bed.procs.stop('cyborg-api')
        bed.cyborg.start_api(cyquota_filter=False)
        bed.cyborg.wait_for_api()
        progress.step('openstack: boots without the filter (%d + 1)' % warm)
        without = _boots(bed, flavor, warm, progress)
        rows += _boot_rows(with_filter, without, warm)
        return rows
    finally:
        progress.step('openstack: tearing the bed down')
        bed.stop()


def _boots(bed, flavor, warm, progress):
    """``{'first': (boot s, delete s), 'warm': [(boot s, delete s)]}``."""
    times = []
    for number in range(warm + 1):
        started = time.monotonic()
        server = bed.boot(flavor=flavor)
        booted = time.monotonic() - started
        assert server['status'] == 'ACTIVE', server.get('fault')
        started = time.monotonic()
        bed.delete_server(server['id'])
        times.append((booted, time.monotonic() - started))
        progress.step('openstack: boot %d: ACTIVE in %.1f s, deleted in '
                      '%.1f s' % (number + 1, *times[-1]))
    return {'first': times[0], 'warm': times[1:]}


def _boot_rows(with_filter, without, warm):
    rows = []
    for index, action in ((0, 'boot to ACTIVE'), (1, 'delete to gone')):
        rows.append(dict(
            part='server, 1 FPGA', unit='s',
            what='%s: first (with: cold bed; without: cold cyborg-api)'
            % action, value=with_filter['first'][index],
            plain=without['first'][index]))
        value = statistics.median(t[index] for t in with_filter['warm'])
        plain = statistics.median(t[index] for t in without['warm'])
        rows.append(dict(part='server, 1 FPGA', unit='s',
                         what='%s: warm, median of %d' % (action, warm),
                         value=value, plain=plain, ratio=value / plain))
    return rows


def _memory(rss):
    rows = [dict(part='memory (RSS)', what=name, unit='MiB',
                 value=size / MIB)
            for name, size in sorted(rss.items())
            if name != openstack_bind.PLAIN_API]
    for row in rows:
        if row['what'] == 'cyborg-api':
            row['plain'] = rss[openstack_bind.PLAIN_API] / MIB
            row['ratio'] = row['value'] / row['plain']
    rows.append(dict(part='memory (RSS)', what='total of the bed',
                     unit='MiB', value=sum(
                         size for name, size in rss.items()
                         if name != openstack_bind.PLAIN_API) / MIB))
    return rows


def summary(rows):
    """The bind PATCH against the target."""
    patch = next(row for row in rows if row['part'] == 'bind PATCH')
    return ['target: bind PATCH with the filter <= %.1fx without it '
            '(medians, same run); measured %.2fx: %s' % (
                TARGET, patch['ratio'], 'met' if patch['ratio'] <= TARGET
                else 'over it')]


def plot(rows, ax):
    """With and without the filter, a pair of bars a row that has both."""
    pairs = [row for row in rows if row.get('plain') is not None
             and row['unit'] in ('s', 'ms')]
    x = range(len(pairs))
    width = 0.4
    ax.bar([i - width / 2 for i in x], [r['value'] for r in pairs], width,
           label='with filter')
    ax.bar([i + width / 2 for i in x], [r['plain'] for r in pairs], width,
           label='without filter')
    ax.set_xticks(list(x), ['%s (%s)' % (r['what'], r['unit'])
                            for r in pairs], fontsize=5, rotation=15)
    ax.set_yscale('log')
    ax.legend()
