"""REST benchmark: ``GET /v1/quota_usages/{id}`` latency
under a steady request rate against a real ``cyquota-api`` process, next
to the trivial ``GET /`` (the version document: no policy, no database)
at the same rate, in the same run.

For every backend (a SQLite file, and throw-away PostgreSQL and MariaDB
databases) a ``cyquota-api`` process is started from its console script
(waitress, ``[api] threads`` default, noauth, its request log in a file),
and a project is given a limit and some usage over HTTP. The load is
open-loop: request ``i`` is due at ``start + i / rate`` whatever happened
to the others, sent by one of a pool of client threads, and its latency is
counted from when it was due, so a server that falls behind shows it in
p99 instead of slowing the load down (no coordinated omission).
"""

import shutil
import tempfile
import threading
import time

import requests

from benchmarks import report
from benchmarks import support

TITLE = ('REST: GET /v1/quota_usages/{id} under a steady request rate, next '
         'to GET /')
COLUMNS = [
    ('request', 'request', '{}'),
    ('backend', 'database', '{}'),
    ('rate', 'target req/s', '{:.0f}'),
    ('achieved', 'achieved req/s', '{:.0f}'),
    ('requests', 'requests', '{}'),
    ('p50', 'p50 ms', '{:.2f}'),
    ('p99', 'p99 ms', '{:.2f}'),
    ('p50_ratio', 'p50/GET / p50', '{:.2f}'),
    ('p99_ratio', 'p99/GET / p99', '{:.2f}'),
    ('check', 'check', '{}'),
]
RATES = (50, 100, 200)
ROOT = 'GET /'
USAGE = 'GET /v1/quota_usages/{id}'
PROJECT = 'bench-project'
SENDERS = 16
HEADERS = {'X-Project-Id': 'bench-admin', 'X-Roles': 'admin'}
#: What the seeded project's FPGA usage must read.
EXPECTED = {'used': 3, 'reserved': 2, 'limit': 8, 'available': 3}


def run(args, progress):
    """Measure every backend in ``args.backends``."""
    seconds = 0.5 if args.quick else 4.0
    rows = []
    for backend in args.backends:
        progress.step('rest: %s: starting cyquota-api' % backend)
        try:
            server, drop = _server(backend)
        except Exception as error:  # any driver or start-up error
            rows.append(dict(request=USAGE, backend=backend, failed=True,
                             check='not started: %s' % str(error)[:60]))
            continue
        try:
            with server:
                _seed(server.url)
                rows.extend(_measure(server.url, backend, seconds,
                                     progress))
        finally:
            server.stop()
            shutil.rmtree(server.directory, ignore_errors=True)
            if drop is not None:
                support.drop_database(drop)
    return rows


def summary(rows):
    """What the usage read adds to a bare request at each rate."""
    lines = []
    by_key = {(r.get('request'), r.get('backend'), r.get('rate')): r
              for r in rows if 'p50' in r}
    for (request, backend, rate), row in sorted(by_key.items()):
        root = by_key.get((ROOT, backend, rate))
        if request == USAGE and root is not None:
            lines.append(
                '%s, %d req/s: usage p50 %.2f ms = GET / %.2f ms + %.2f ms; '
                'p99 %.2f ms (GET / %.2f ms)' % (
                    backend, rate, row['p50'], root['p50'],
                    row['p50'] - root['p50'], row['p99'], root['p99']))
    return lines


def plot(rows, ax):
    """p50 and p99 of every request, database and rate."""
    report.latency_bars(ax, rows, lambda r: '%s\n%s, %d/s' % (
        'usage' if r['request'] == USAGE else 'GET /', r['backend'],
        r['rate']), 'latency from when due, ms')


def _server(backend):
    """A cyquota-api on ``backend``'s database (migrated), not started,
    and the URL of a database to drop afterwards (or None)."""
    directory = tempfile.mkdtemp(prefix='cyquota-bench-')
    if backend == 'sqlite':
        url, drop = 'sqlite:///%s/cyquota.sqlite' % directory, None
    else:
        url = drop = support.create_database(backend)
    server = support.ApiServer(url, directory=directory)
    server.manage('db', 'sync')
    return server, drop


def _seed(url):
    """A limit of 8 FPGA, 3 used and 2 reserved, for the read to show."""
    with requests.Session() as http:
        http.put(url + '/v1/registered_limits/FPGA',
                 json={'default_limit': 8}, headers=HEADERS
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


def _root_is_right(response):
    return response.json()['versions'][0]['id'] == 'v1'


def _open_loop(url, rate, seconds, is_right):
    """Send ``rate * seconds`` GETs, request ``i`` due at ``start + i /
    rate``; returns (sorted latencies from due time in s, wall time, bad
    answers)."""
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
                    right = response.status_code == 200 and is_right(
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


def _row(request, backend, rate, latencies, wall, bad):
    return dict(request=request, backend=backend, rate=rate,
                achieved=len(latencies) / wall, requests=len(latencies),
                p50=report.percentile_ms(latencies, 0.50),
                p99=report.percentile_ms(latencies, 0.99), bad=bad,
                failed=bool(bad),
                check='ok' if not bad else '%d wrong answers' % bad)


def _measure(url, backend, seconds, progress):
    targets = [(ROOT, url + '/', _root_is_right),
               (USAGE, '%s/v1/quota_usages/%s' % (url, PROJECT),
                _usage_is_right)]
    rows = []
    for rate in RATES:
        roots = None
        for request, target, is_right in targets:
            _open_loop(target, 20, 0.5, is_right)  # warm up, untimed
            progress.step('rest: %s: %s at %d req/s' % (backend, request,
                                                        rate))
            row = _row(request, backend, rate,
                       *_open_loop(target, rate, seconds, is_right))
            if request == ROOT:
                roots = row
            else:
                row['p50_ratio'] = row['p50'] / roots['p50']
                row['p99_ratio'] = row['p99'] / roots['p99']
            rows.append(row)
    return rows
