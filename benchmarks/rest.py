"""REST benchmark: what the API adds to the engine, and how much load it
holds with one and two worker processes.

For every backend (a SQLite file, and throw-away PostgreSQL and MariaDB
databases) a ``cyquota-api`` process is started from its console script
(waitress, ``[api] threads`` default, noauth, its request log in a file),
and a project is given a limit and some usage over HTTP.

Latency, one keep-alive client, one request at a time: ``GET /`` (the
version document: no policy, no database), ``GET /v1/quota_usages/{id}``
and ``POST /v1/reservations`` (one GPU for a project of its own), beside
the engine calls they make, ``QUOTAS.get_usage_document`` and
``QUOTAS.reserve``, in this process on the same database. The six take
turns, fifty calls each, so that the ratios between them hold on a
machine whose speed drifts. The sixth is ``QUOTAS.reserve`` again, paced
as the POSTs are: before each call the client is busy as long as a POST
takes beyond a reserve, so the database has idled as long as it does
between the reserves of POSTs (a commit after an idle moment can cost more
than one right after another, on a virtual machine much more).

Load: ``GET /v1/quota_usages/{id}`` at rising offered rates from a load
generator in a second process, against ``cyquota-api`` with 1 and then
``--workers 2``. The load is open-loop: request ``i`` is due at ``start +
i / rate`` whatever happened to the others, sent by one of a pool of
client threads, and its latency is counted from when it was due, so a
server that falls behind shows it in p99 instead of slowing the load down
(no coordinated omission). A rate is held when every answer is right, the
achieved rate is within 5% of the offered one and p99 is under 50 ms; the
first rate not held ends the climb, so the run is bounded.

Then device claims and lease creates with 50 and 5,000 devices, beside a
plain reserve, on servers of their own (``device_claims``).
"""

import concurrent.futures
import multiprocessing
import shutil
import statistics
import tempfile
import threading
import time

import requests

import benchmarks
from benchmarks import device_claims
from benchmarks import report
from cyquota import context as cyquota_context
from cyquota import quota
from servers import api_server
from servers import databases

TITLE = ('REST: one client beside the engine calls; GET /v1/quota_usages/'
         '{id} load with 1 and 2 workers; device claims by devices')
COLUMNS = [
    ('request', 'request', '{}'),
    ('backend', 'database', '{}'),
    ('devices', 'devices', '{:,}'),
    ('workers', 'workers', '{}'),
    ('rate', 'offered req/s', '{:.0f}'),
    ('achieved', 'achieved req/s', '{:.0f}'),
    ('requests', 'requests', '{}'),
    ('p50', 'p50 ms', '{:.2f}'),
    ('p99', 'p99 ms', '{:.2f}'),
    ('server_p50', 'p50 - GET / ms', '{:.2f}'),
    ('check', 'check', '{}'),
]
ROOT = 'GET /'
USAGE = 'GET /v1/quota_usages/{id}'
RESERVE = 'POST /v1/reservations'
DIRECT_USAGE = 'QUOTAS.get_usage_document'
DIRECT_RESERVE = 'QUOTAS.reserve'
PACED_RESERVE = 'QUOTAS.reserve, paced'
#: Offered rates of the load, climbed until one is not held.
RATES = (100, 200, 250, 300, 400, 500)
WORKERS = (1, 2)
#: What "held" allows at most.
HELD_P99_MS = 50
PROJECT = 'bench-project'
RESERVING_PROJECT = 'bench-reserving'
SENDERS = 16
HEADERS = {'X-Project-Id': 'bench-admin', 'X-Roles': 'admin'}
#: What the seeded project's FPGA usage must read.
EXPECTED = {'used': 3, 'reserved': 2, 'limit': 8, 'leased': 0, 'promised': 0,
            'available': 3}


def run(args, progress):
    """Measure every backend in ``args.backends``."""
    calls = 30 if args.quick else 500
    seconds = 0.5 if args.quick else 3.0
    rows = []
    # The load generator: a second process, started once.
    with concurrent.futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context('spawn')) as load:
        for backend in args.backends:
            rows.extend(_backend(backend, calls, seconds, load, progress))
            rows.extend(device_claims.run(backend, args.quick, progress))
    return rows


def _backend(backend, calls, seconds, load, progress):
    directory = tempfile.mkdtemp(prefix='cyquota-bench-')
    try:
        url = databases.create_database(backend) if backend != 'sqlite' \
            else 'sqlite:///%s/cyquota.sqlite' % directory
    except Exception as error:  # any driver error: server not there
        return [dict(request=USAGE, backend=backend, failed=True,
                     check='not started: %s' % str(error)[:60])]
    rows = []
    try:
        server = api_server.ApiServer(url, directory=directory)
        server.manage('db', 'sync')
        for workers in WORKERS:
            progress.step('rest: %s: starting cyquota-api --workers %d'
                          % (backend, workers))
            server.start(arguments=['--workers', str(workers)])
            try:
                if workers == 1:
                    _seed(server.url)
                    progress.step('rest: %s: one client' % backend)
                    rows.extend(_latencies(server.url, url, backend, calls))
                rows.extend(_climb(server.url, backend, workers, seconds,
                                   load, progress))
            finally:
                server.stop()
    finally:
        databases.use_database('sqlite://', migrate=False)
        shutil.rmtree(directory, ignore_errors=True)
        if backend != 'sqlite':
            databases.drop_database(url)
    return rows


def _seed(url):
    """A limit of 8 FPGA, 3 used and 2 reserved, for the read to show;
    GPU without a practical limit, for the reserves."""
    with requests.Session() as http:
        for resource, limit in (('FPGA', 8), ('GPU', 10 ** 9)):
            http.put(url + '/v1/registered_limits/' + resource,
                     json={'default_limit': limit}, headers=HEADERS
                     ).raise_for_status()
        for amount, commit in ((3, True), (2, False)):
            made = http.post(url + '/v1/reservations', headers=HEADERS, json={
                'project_id': PROJECT, 'deltas': {'FPGA': amount}})
            made.raise_for_status()
            if commit:
                http.post(url + '/v1/reservations/commit', headers=HEADERS,
                          json={'project_id': PROJECT,
                                'reservations': made.json()['reservations']}
                          ).raise_for_status()


def _usage_is_right(response):
    return response.json()['quota_usage']['resources']['FPGA'] == EXPECTED


def _interleaved(calls, count, block=50, pauses=None):
    """Sorted seconds of ``count`` calls of each of ``calls`` (name:
    function), ``block`` calls of one after ``block`` of the next, each
    block after ten untimed calls: every call is timed in a loop of its
    own (as when measured alone), and a slower moment of a shared machine
    weighs on all of them alike, not on whichever was being measured.
    ``pauses``: {name: function of the latencies so far} giving the
    seconds to wait, untimed and busy (as a server is between the parts
    of a request), before each call of that name."""
    latencies = {name: [] for name in calls}
    pauses = pauses or {}
    for done in range(0, count, block):
        for name, call in calls.items():
            pause = pauses.get(name, lambda latencies: 0)(latencies)
            for number in range(10 + min(block, count - done)):
                benchmarks.busy(pause)
                started = time.perf_counter()
                call()
                if number >= 10:
                    latencies[name].append(time.perf_counter() - started)
    return {name: sorted(seconds) for name, seconds in latencies.items()}


def _latencies(url, database_url, backend, calls):
    """One keep-alive client and the engine calls in this process, in
    turns."""
    usage_url = '%s/v1/quota_usages/%s' % (url, PROJECT)
    reserve = {'project_id': RESERVING_PROJECT, 'deltas': {'GPU': 1}}
    databases.use_database(database_url, migrate=False)
    ctx = cyquota_context.get_admin_context()
    with requests.Session() as http:
        def get(target, is_right):
            response = http.get(target, headers=HEADERS, timeout=30)
            if response.status_code != 200 or not is_right(response):
                raise RuntimeError('%s: %s' % (target, response.text[:200]))

        def post():
            response = http.post(url + '/v1/reservations', json=reserve,
                                 headers=HEADERS, timeout=30)
            if response.status_code != 201:
                raise RuntimeError('reserve: %s' % response.text[:200])

        def direct_reserve():
            quota.QUOTAS.reserve(ctx, RESERVING_PROJECT, {'GPU': 1})

        measured = _interleaved({
            ROOT: lambda: get(url + '/', _root_is_right),
            USAGE: lambda: get(usage_url, _usage_is_right),
            RESERVE: post,
            DIRECT_USAGE: lambda: quota.QUOTAS.get_usage_document(
                ctx, PROJECT),
            DIRECT_RESERVE: direct_reserve,
            PACED_RESERVE: direct_reserve}, calls,
            pauses={PACED_RESERVE: _post_beyond_reserve})
    return [_latency_row(request, backend, latencies)
            for request, latencies in measured.items()]


def _post_beyond_reserve(latencies):
    """How much longer a POST takes than a reserve, by their medians so
    far: how long the database idles between the reserves of POSTs."""
    def median(name):
        return statistics.median(latencies[name] or [0])
    return max(0, median(RESERVE) - median(DIRECT_RESERVE))


def _root_is_right(response):
    return response.json()['versions'][0]['id'] == 'v1'


def _latency_row(request, backend, latencies):
    return dict(request=request, backend=backend, workers=1,
                requests=len(latencies),
                p50=report.percentile_ms(latencies, 0.50),
                p99=report.percentile_ms(latencies, 0.99), check='ok')


def _climb(url, backend, workers, seconds, load, progress):
    """Load rows at rising rates, up to the first one not held."""
    rows = []
    target = '%s/v1/quota_usages/%s' % (url, PROJECT)
    # Warm up, untimed: every worker connects to the database.
    load.submit(open_loop, target, 50, 1.0).result()
    for rate in RATES:
        progress.step('rest: %s: %d worker(s), %s at %d req/s'
                      % (backend, workers, USAGE, rate))
        latencies, wall, bad = load.submit(open_loop, target, rate,
                                           seconds).result()
        row = dict(request=USAGE, backend=backend, workers=workers,
                   rate=rate, achieved=len(latencies) / wall,
                   requests=len(latencies),
                   p50=report.percentile_ms(latencies, 0.50),
                   p99=report.percentile_ms(latencies, 0.99), bad=bad,
                   failed=bool(bad))
        row['held'] = (not bad and row['achieved'] >= 0.95 * rate
                       and row['p99'] < HELD_P99_MS)
        row['check'] = ('%d wrong answers' % bad if bad else
                        'held' if row['held'] else 'not held')
        rows.append(row)
        if not row['held']:
            break
    return rows


def open_loop(url, rate, seconds):
    """Send ``rate * seconds`` usage GETs, request ``i`` due at ``start +
    i / rate``; returns (sorted latencies from due time in s, wall time,
    bad answers). Runs in the load generator's process."""
    total = max(1, int(rate * seconds))
    lock = threading.Lock()
    next_index = iter(range(total))
    latencies, bad = [], []
    start = time.perf_counter() + 0.05
    finished = [start]

    def send():
        with requests.Session() as http:
            while True:
                with lock:
                    index = next(next_index, None)
                if index is None:
                    return
                due = start + index / rate
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                try:
                    response = http.get(url, headers=HEADERS, timeout=30)
                    right = response.status_code == 200 and _usage_is_right(
                        response)
                except (requests.RequestException, ValueError, KeyError):
                    right = False
                done = time.perf_counter()
                with lock:
                    latencies.append(done - due)
                    finished[0] = max(finished[0], done)
                    if not right:
                        bad.append(index)

    threads = [threading.Thread(target=send) for _ in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(latencies), finished[0] - start, len(bad)


def summary(rows):
    """The REST targets, each with the figures of this run."""
    lines = []
    for backend in dict.fromkeys(r['backend'] for r in rows):
        one = {r['request']: r for r in rows if r['backend'] == backend
               and not {'rate', 'devices'} & set(r) and 'p50' in r}
        if len(one) == 6:
            root, usage, post = one[ROOT], one[USAGE], one[RESERVE]
            for name in (DIRECT_RESERVE, PACED_RESERVE):
                bound = root['p50'] + one[name]['p50'] + 1
                lines.append(
                    '%s: POST /v1/reservations p50 %.2f ms <= GET / %.2f + '
                    '%s %.2f + 1 ms = %.2f: %s' % (
                        backend, post['p50'], root['p50'], name,
                        one[name]['p50'], bound,
                        _verdict(post['p50'] <= bound)))
            lines.append(
                '%s: GET usage p50 %.2f ms <= 2 x GET / %.2f ms (%.2fx; '
                'QUOTAS.get_usage_document %.2f ms): %s' % (
                    backend, usage['p50'], root['p50'],
                    usage['p50'] / root['p50'], one[DIRECT_USAGE]['p50'],
                    _verdict(usage['p50'] <= 2 * root['p50'])))
        for workers in WORKERS:
            held = [r['rate'] for r in rows if r['backend'] == backend
                    and r.get('workers') == workers and r.get('held')]
            lines.append('%s: GET usage, %d worker(s): holds %s req/s' % (
                backend, workers, max(held) if held else 'none of the'))
        lines.append(_at_250(backend, [
            r for r in rows if r['backend'] == backend
            and r.get('workers') == 2 and 'rate' in r]))
    return lines + device_claims.summary(rows)


def _at_250(backend, climb):
    """The 2-worker load target, from that climb's rows (a climb ends at
    the first rate not held, which may come before 250 req/s)."""
    target = '%s: 2 workers hold 250 req/s with p99 < %d ms' % (
        backend, HELD_P99_MS)
    at_250 = [r for r in climb if r['rate'] == 250]
    if at_250:
        return '%s (p99 %.2f ms): %s' % (target, at_250[0]['p99'],
                                         _verdict(at_250[0]['held']))
    if climb:
        last = climb[-1]
        return '%s: NOT met (not measured: %d req/s was not held, p99 ' \
            '%.2f ms)' % (target, last['rate'], last['p99'])
    return '%s: NOT met (no load measured)' % target


def _verdict(met):
    return 'met' if met else 'NOT met'


def plot(rows, ax):
    """p50 and p99 of every measurement but the device claims, which are
    drawn beside them: server time against devices."""
    device_claims.plot(rows, ax)
    rows = [r for r in rows if 'devices' not in r]
    report.latency_bars(ax, rows, lambda r: '%s\n%s%s' % (
        r['request'].replace('/v1/', '').replace('QUOTAS.', ''),
        r['backend'],
        ', %dw %d/s' % (r['workers'], r['rate']) if 'rate' in r else ''),
        'latency, ms')
