"""Device claims over REST, part of the ``rest`` benchmark: a reserve that
claims a device beside a plain reserve and a lease create, with 50 and
with 5,000 devices.

For every backend, two throw-away databases, one with 50 devices and one
with 5,000 (``--quick``: 500), each device a child of a compute node with
4 FPGAs (bulk rows, ``lease_fill.add_devices``, then analyzed), and a
``cyquota-api``
process on each (its console script, waitress, noauth, one worker, as
``rest``'s). One keep-alive client (``requests``) calls each server, one
request at a time:

* ``GET /``: the version document, the client's own time;
* ``POST /v1/reservations`` of ``FPGA: 1`` (rolled back, untimed);
* the same with a consumer and ``devices: {"resources": "FPGA:1"}``: a
  claim of the first device with room (rolled back, untimed, which frees
  the device);
* ``POST /v1/leases`` of one FPGA for an hour a day ahead (ended, untimed,
  by ``DELETE``).

The eight (four calls, two servers) take turns in blocks, each block
after untimed calls, so that a slower moment of the machine weighs on all
alike. A call's server time is its p50 less the p50 of ``GET /`` on the
same server. Targets, each at 50 and at 5,000 devices: a claim within 2x
of a plain reserve, a lease create within 1.5x of a claim; and each of
the three flat from 50 to 5,000 devices (within 1.2x).
"""

import concurrent.futures
import contextlib
import datetime
import tempfile
import time
import uuid

import requests

import benchmarks
from benchmarks import lease_fill
from benchmarks import lease_rows
from benchmarks import report
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import placement_models
from cyquota import quota
from servers import api_server

DEVICES = (50, 5000)
QUICK_DEVICES = (50, 500)
ROOT = 'GET /'
RESERVE = 'POST /v1/reservations FPGA:1'
CLAIM = 'POST /v1/reservations claiming FPGA:1'
LEASE = 'POST /v1/leases FPGA:1'
CALLS = (ROOT, RESERVE, CLAIM, LEASE)
#: The targets: a claim over a plain reserve; a lease over a claim; the
#: most devices over the fewest.
CLAIM_TARGET = 2.0
LEASE_TARGET = 1.5
FLAT = 1.2
HEADERS = {'X-Project-Id': 'bench-admin', 'X-Roles': 'admin'}
PROJECTS = {RESERVE: 'bench-reserving', CLAIM: 'bench-claiming',
            LEASE: 'bench-leasing'}


class _Server:
    """A ``cyquota-api`` on its database of ``devices`` devices, and the
    timed calls: each returns its seconds."""

    def __init__(self, http, url, database_url, devices):
        self.http = http
        self.url = url
        self.database_url = database_url
        self.devices = devices
        self.calls = {ROOT: self.root, RESERVE: self.reserve,
                      CLAIM: self.claim, LEASE: self.lease}

    def _send(self, method, path, expected, body=None):
        """``(seconds, answer)`` of a request; RuntimeError if it is not
        answered ``expected``."""
        began = time.perf_counter()
        answer = self.http.request(method, self.url + path, json=body,
                                   headers=HEADERS, timeout=60)
        elapsed = time.perf_counter() - began
        if answer.status_code != expected:
            raise RuntimeError('%s %s: %d %s' % (method, path,
                                                 answer.status_code,
                                                 answer.text[:300]))
        return elapsed, answer

    def root(self):
        return self._send('GET', '/', 200)[0]

    def _reserve(self, project, **extra):
        elapsed, answer = self._send('POST', '/v1/reservations', 201, dict(
            extra, project_id=project, deltas={lease_fill.RESOURCE: 1}))
        return elapsed, answer.json()['reservations']

    def _rollback(self, project, uuids):
        self._send('POST', '/v1/reservations/rollback', 204, {
            'project_id': project, 'reservations': uuids})

    def reserve(self):
        elapsed, uuids = self._reserve(PROJECTS[RESERVE])
        self._rollback(PROJECTS[RESERVE], uuids)
        return elapsed

    def claim(self):
        """A reserve that claims a device for a new consumer, rolled back
        untimed."""
        elapsed, uuids = self._reserve(
            PROJECTS[CLAIM], consumer_id=str(uuid.uuid4()),
            devices={'resources': '%s:1' % lease_fill.RESOURCE})
        self._rollback(PROJECTS[CLAIM], uuids)
        return elapsed

    def lease(self):
        start = (datetime.datetime.now(datetime.timezone.utc)
                 + datetime.timedelta(days=1)).replace(microsecond=0)
        elapsed, answer = self._send('POST', '/v1/leases', 201, {'lease': {
            'project_id': PROJECTS[LEASE], 'start_date': start.isoformat(),
            'end_date': (start + datetime.timedelta(hours=1)).isoformat(),
            'reservations': [{'resource_type': 'accelerator:'
                              + lease_fill.RESOURCE, 'amount': 1}]}})
        made = answer.json()['lease']
        if (made['status'] != lease_models.PENDING
                or len(made['reservations'][0]['allocations']) != 1):
            raise RuntimeError('a lease was made %s with %s' % (
                made['status'], made['reservations']))
        self._send('DELETE', '/v1/leases/' + made['id'], 204)
        return elapsed

    def set_limit(self):
        """A limit of FPGA for every project, finite and never reached."""
        self._send('PUT', '/v1/registered_limits/' + lease_fill.RESOURCE,
                   200, {'default_limit': lease_fill.LIMIT})

    def claim_problems(self):
        """What is wrong with a claim: it must hold a device until rolled
        back (read in this process, on the server's database)."""
        consumer = str(uuid.uuid4())
        ctx = cyquota_context.get_admin_context()
        benchmarks.use_database(self.database_url)
        _, uuids = self._reserve(
            PROJECTS[CLAIM], consumer_id=consumer,
            devices={'resources': '%s:1' % lease_fill.RESOURCE})
        held = quota.QUOTAS.get_device_allocations(ctx, consumer)
        self._rollback(PROJECTS[CLAIM], uuids)
        after = quota.QUOTAS.get_device_allocations(ctx, consumer)
        if len(held['allocations']) != 1 or after['allocations']:
            return ['a claim held %s, then %s' % (held['allocations'],
                                                  after['allocations'])]
        return []

    def books_problems(self):
        """What is wrong after the run: a project holds something, a
        device allocation or a live lease is left."""
        benchmarks.use_database(self.database_url)
        ctx = cyquota_context.get_admin_context()
        problems = []
        for project in PROJECTS.values():
            usage = quota.QUOTAS.get_project_usage(ctx, project)[
                lease_fill.RESOURCE]
            counts = tuple(usage[key] for key in (
                'used', 'reserved', 'leased', 'promised'))
            if any(counts):
                problems.append('%s holds %s' % (project, counts))
        allocated = lease_rows.count(
            placement_models.DeviceAllocation.__table__)
        live = sum(lease_rows.count(lease_models.Lease.__table__,
                                    status=status)
                   for status in lease_models.LIVE)
        if allocated or live:
            problems.append('%d device allocations, %d live leases left'
                            % (allocated, live))
        return problems


def run(backend, quick, progress):
    """The rows of ``backend``: each call's latency at each number of
    devices."""
    calls, block, warm = (10, 5, 1) if quick else (200, 25, 3)
    sizes = QUICK_DEVICES if quick else DEVICES
    with contextlib.ExitStack() as stack:
        http = stack.enter_context(requests.Session())
        started = {}
        for size in sizes:
            database_url = stack.enter_context(
                benchmarks.throwaway_database(backend))
            if database_url is None:
                return [dict(request=CLAIM, backend=backend, devices=size,
                             failed=True, check='server not reachable')]
            with db_api.get_engine().begin() as conn:
                lease_fill.add_devices(conn, size)
            # Statistics as a grown database has them: a fresh bulk fill
            # leaves PostgreSQL's planner blind to the devices.
            lease_fill.analyze(backend)
            started[size, database_url] = api_server.ApiServer(
                database_url, directory=stack.enter_context(
                    tempfile.TemporaryDirectory(prefix='cyquota-bench-')))
            stack.callback(started[size, database_url].stop)
        progress.step('rest: %s: starting cyquota-api on %s devices' % (
            backend, ' and on '.join(format(size, ',') for size in sizes)))
        # Together: each start waits mostly for its process's imports.
        with concurrent.futures.ThreadPoolExecutor(len(sizes)) as starting:
            for future in [starting.submit(server.start, arguments=[
                    '--workers', '1']) for server in started.values()]:
                future.result()
        servers = [_Server(http, server.url, database_url, size)
                   for (size, database_url), server in started.items()]
        for server in servers:
            server.set_limit()
        problems = {server.devices: server.claim_problems()
                    for server in servers}
        progress.step('rest: %s: device claims and leases, 50 and %s devices'
                      % (backend, format(sizes[-1], ',')))
        latencies = _interleaved(servers, calls, block, warm)
        for server in servers:
            problems[server.devices] += server.books_problems()
    return _rows(backend, latencies, problems)


def _interleaved(servers, calls, block, warm):
    """``{(devices, call): sorted seconds}``: blocks of ``block`` calls of
    each kind on each server by turns, each block after ``warm`` untimed
    calls, the server going first alternating."""
    latencies = {(server.devices, name): [] for server in servers
                 for name in CALLS}
    for done in range(0, calls, block):
        order = servers if (done // block) % 2 == 0 else servers[::-1]
        for server in order:
            for name in CALLS:
                for number in range(warm + min(block, calls - done)):
                    elapsed = server.calls[name]()
                    if number >= warm:
                        latencies[server.devices, name].append(elapsed)
    return {key: sorted(found) for key, found in latencies.items()}


def _rows(backend, latencies, problems):
    rows = []
    for (devices, name), measured in latencies.items():
        rows.append(dict(
            request=name, backend=backend, devices=devices, workers=1,
            requests=len(measured), p50=report.percentile_ms(measured, 0.5),
            p99=report.percentile_ms(measured, 0.99),
            check='; '.join(problems[devices]) or 'ok',
            failed=bool(problems[devices])))
    root = {row['devices']: row['p50'] for row in rows
            if row['request'] == ROOT}
    for row in rows:
        if row['request'] != ROOT:
            row['server_p50'] = row['p50'] - root[row['devices']]
    return rows


# -- the report --------------------------------------------------------------

def _ratio_line(label, figure, reference, target, failed):
    if reference <= 0:
        return '  %s: %.2f ms vs %.2f ms: no ratio, NOT met' % (
            label, figure, reference)
    ratio = figure / reference
    return '  %s: %.2f ms vs %.2f ms: %.2fx, %s' % (
        label, figure, reference, ratio,
        'met' if ratio <= target and not failed else 'NOT met')


def summary(rows):
    """The device-claim targets, on server time (p50 less ``GET /``'s),
    each beside its reference, met or NOT met."""
    rows = [row for row in rows if 'devices' in row]
    found = {(r['backend'], r['devices'], r['request']): r for r in rows
             if 'server_p50' in r}
    backends = list(dict.fromkeys(row['backend'] for row in rows))
    sizes = sorted({row['devices'] for row in rows})
    lines = ['%s: no measurement (%s)' % (row['backend'], row['check'])
             for row in rows if 'p50' not in row]
    for name, reference, target in ((CLAIM, RESERVE, CLAIM_TARGET),
                                    (LEASE, CLAIM, LEASE_TARGET)):
        lines.append('target: %s within %.1fx of %s (server time: p50 less '
                     'GET /)' % (name, target, reference))
        lines += [_ratio_line(
            '%s, %s devices' % (backend, format(size, ',')),
            found[backend, size, name]['server_p50'],
            found[backend, size, reference]['server_p50'], target,
            found[backend, size, name]['failed'])
            for backend in backends for size in sizes
            if (backend, size, name) in found]
    if len(sizes) > 1:
        lines.append('target: each call flat from %s to %s devices (server '
                     'time within %.1fx)' % (format(sizes[0], ','),
                                             format(sizes[-1], ','), FLAT))
        lines += [_ratio_line(
            '%s: %s' % (backend, name), found[backend, sizes[-1], name][
                'server_p50'], found[backend, sizes[0], name]['server_p50'],
            FLAT, found[backend, sizes[-1], name]['failed'])
            for backend in backends for name in CALLS[1:]
            if (backend, sizes[-1], name) in found]
    return lines


def plot(rows, ax):
    """Server time (p50 less ``GET /``'s) against devices, one line per
    backend and call, on axes of its own to the right of ``ax``."""
    rows = [row for row in rows if 'server_p50' in row]
    if not rows:
        return
    curve = report.side_axes(ax, '45%')
    for backend in dict.fromkeys(row['backend'] for row in rows):
        for name in CALLS[1:]:
            points = sorted((row['devices'], row['server_p50'])
                            for row in rows if row['backend'] == backend
                            and row['request'] == name)
            curve.plot(*zip(*points), marker='o', label='%s, %s' % (
                backend, name.replace('POST /v1/', '')))
    report.sizes_axis(curve, [row['devices'] for row in rows], 'devices',
                      'server time (p50 - GET /), ms')
