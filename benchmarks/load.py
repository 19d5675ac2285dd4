"""Load test: worker processes on 127.0.0.1 drive cyquota the two ways
clients do, each next to its bare round trip in the same run.

REST: a real ``cyquota-api`` process (waitress, noauth) on a throw-away
database; each worker loops ``POST /v1/reservations`` (one ``FPGA``),
``POST /v1/reservations/commit`` and ``GET /v1/quota_usages/{id}``, next to
``GET /`` (no policy, no database) driven the same way.

RPC: a spawned conductor process on the same database and RabbitMQ; each
worker loops ``ConductorAPI.reserve`` and ``ConductorAPI.commit``, next to
a bare oslo.messaging ``echo`` call served by the same process.

The load is closed loop and bounded both ways: every worker stops after
``ITERATIONS`` loops or ``seconds``, whichever comes first. Each worker
uses a project of its own, so the figure is the service's throughput, not
one contended row. Afterwards every worker's project must show ``used``
equal to its commits and nothing left ``reserved``.
"""

import multiprocessing
import shutil
import tempfile
import time
import uuid

import oslo_messaging
import requests
import sqlalchemy as sa

import benchmarks
from benchmarks import report
from benchmarks import rpc
from cyquota.conductor import rpc as conductor_rpc
from cyquota.conductor import rpcapi
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from servers import api_server

TITLE = ('Load: REST and RPC reserve + commit from worker processes, next '
         'to GET / and a bare RPC echo')
COLUMNS = [
    ('path', 'path', '{}'),
    ('operation', 'operation', '{}'),
    ('backend', 'database', '{}'),
    ('workers', 'workers', '{}'),
    ('calls', 'calls', '{}'),
    ('rate', 'calls/s', '{:.0f}'),
    ('p50', 'p50 ms', '{:.2f}'),
    ('p99', 'p99 ms', '{:.2f}'),
    ('p50_ratio', 'p50/reference p50', '{:.2f}'),
    ('check', 'check', '{}'),
]
SERVER_BACKENDS = ('postgresql', 'mysql')
WORKERS = 4
#: Loops a worker runs at most (``--quick``: ``QUICK_ITERATIONS``).
ITERATIONS = 2000
QUICK_ITERATIONS = 20
HEADERS = {'X-Project-Id': 'load-admin', 'X-Roles': 'admin'}
REST, RPC = 'REST', 'RPC'
ROOT, ECHO = 'GET /', 'echo (bare oslo.messaging)'
RESERVE_REST = 'POST /v1/reservations'
COMMIT_REST = 'POST /v1/reservations/commit'
USAGE = 'GET /v1/quota_usages/{id}'
RESERVE_RPC, COMMIT_RPC = 'ConductorAPI.reserve', 'ConductorAPI.commit'
_SHORT = {ROOT: 'GET /', RESERVE_REST: 'reserve', COMMIT_REST: 'commit',
          USAGE: 'usage', ECHO: 'echo', RESERVE_RPC: 'reserve',
          COMMIT_RPC: 'commit'}
#: The operation each path's figures are compared with.
REFERENCE = {REST: ROOT, RPC: ECHO}


def run(args, progress):
    """Load every server backend of ``args.backends``."""
    seconds = 0.5 if args.quick else 5.0
    iterations = QUICK_ITERATIONS if args.quick else ITERATIONS
    rows = []
    servers = [b for b in args.backends if b in SERVER_BACKENDS]
    for backend, url in benchmarks.databases('load', servers, progress):
        if url is None:
            rows.append(dict(benchmarks.UNREACHABLE, path=REST,
                             backend=backend))
            continue
        rows.extend(_load_rest(url, backend, seconds, iterations, progress))
        rows.extend(_load_rpc(url, backend, seconds, iterations, progress))
    return rows


def summary(rows):
    """Lines under the table: each path's throughput against its
    reference's."""
    lines = ['the embedded SQLite is not loaded: one process, no server']
    by_key = {(r.get('backend'), r.get('operation')): r
              for r in rows if 'rate' in r}
    for backend in SERVER_BACKENDS:
        for path, operations in ((REST, (RESERVE_REST, COMMIT_REST, USAGE)),
                                 (RPC, (RESERVE_RPC, COMMIT_RPC))):
            reference = by_key.get((backend, REFERENCE[path]))
            measured = [by_key.get((backend, op)) for op in operations]
            if reference and all(measured):
                lines.append('%s, %s: %s at %.0f calls/s (%s at %.0f/s)' % (
                    backend, path, ' + '.join(
                        '%s p50 %.2f ms' % (row['operation'], row['p50'])
                        for row in measured),
                    measured[0]['rate'], REFERENCE[path], reference['rate']))
    return lines


def plot(rows, ax):
    """p50 and p99 of every operation, beside its reference."""
    report.latency_bars(ax, rows, lambda r: '%s\n%s\n%s' % (
        r['path'], _SHORT[r['operation']], r['backend']),
        'latency, ms (%d workers)' % WORKERS)


# -- the two paths ---------------------------------------------------------

def _load_rest(url, backend, seconds, iterations, progress):
    directory = tempfile.mkdtemp(prefix='cyquota-load-')
    server = api_server.ApiServer(url, directory=directory)
    progress.step('load: %s: starting cyquota-api' % backend)
    try:
        with server:
            rows = []
            for script, operations in (('root', (ROOT,)), ('rest', (
                    RESERVE_REST, COMMIT_REST, USAGE))):
                progress.step('load: %s: %s, %d workers' % (
                    backend, '/'.join(operations), WORKERS))
                rows.extend(_drive(REST, backend, operations, script,
                                   server.url, seconds, iterations))
            return _add_ratios(rows)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _load_rpc(url, backend, seconds, iterations, progress):
    name = 'cyquota-load-%s' % uuid.uuid4().hex[:12]
    spawn = multiprocessing.get_context('spawn')
    ready, stop = spawn.Event(), spawn.Event()
    server = spawn.Process(target=rpc._serve, args=(url, name, ready, stop))
    progress.step('load: %s: starting the conductor process' % backend)
    server.start()
    try:
        if not ready.wait(120):
            return [dict(path=RPC, backend=backend, failed=True,
                         check='conductor process did not start')]
        rows = []
        for script, operations in (('echo', (ECHO,)), ('rpc', (
                RESERVE_RPC, COMMIT_RPC))):
            progress.step('load: %s: %s, %d workers' % (
                backend, '/'.join(operations), WORKERS))
            rows.extend(_drive(RPC, backend, operations, script,
                               (url, name), seconds, iterations))
        return _add_ratios(rows)
    finally:
        stop.set()
        server.join(timeout=60)
        if server.is_alive():
            server.kill()
        rpc._delete_bus(name)


def _drive(path, backend, operations, script, target, seconds, iterations):
    """Run ``script`` in ``WORKERS`` processes at once; one row per
    operation, with the books checked for the ledger's scripts."""
    spawn = multiprocessing.get_context('spawn')
    barrier, results = spawn.Barrier(WORKERS + 1), spawn.Queue()
    workers = [spawn.Process(target=_worker, args=(
        script, target, 'load-%s-%d' % (script, index), seconds, iterations,
        barrier, results)) for index in range(WORKERS)]
    for worker in workers:
        worker.start()
    try:
        barrier.wait(timeout=300)
        started = time.monotonic()
        reports = [results.get(timeout=seconds + 300) for _ in workers]
        wall = time.monotonic() - started
    finally:
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.kill()
    rows = []
    for operation in operations:
        latencies = sorted(sum((r['latencies'][operation] for r in reports),
                               []))
        errors = sum(r['errors'] for r in reports)
        row = dict(path=path, operation=operation, backend=backend,
                   workers=WORKERS, calls=len(latencies),
                   rate=len(latencies) / wall, errors=errors,
                   check='ok' if not errors else '%d errors' % errors,
                   failed=bool(errors))
        if latencies:
            row.update(p50=report.percentile_ms(latencies, 0.50),
                       p99=report.percentile_ms(latencies, 0.99))
        rows.append(row)
    if script in ('rest', 'rpc'):
        _check_books(rows, {r['project']: r['commits'] for r in reports})
    return rows


def _add_ratios(rows):
    """Each operation's p50 against its path's reference, measured just
    before on the same server."""
    references = {(r['path'], r['backend']): r for r in rows
                  if r['operation'] == REFERENCE[r['path']] and 'p50' in r}
    for row in rows:
        reference = references.get((row['path'], row['backend']))
        if reference is not None and row is not reference and 'p50' in row:
            row['p50_ratio'] = row['p50'] / reference['p50']
    return rows


def _check_books(rows, commits):
    """Each worker's project used what it committed; nothing reserved."""
    usages = models.QuotaUsage.__table__
    with db_api.get_engine().connect() as conn:
        found = dict(((project, (used, reserved)) for project, used, reserved
                      in conn.execute(sa.select(
                          usages.c.project_id, usages.c.used,
                          usages.c.reserved).where(
                          usages.c.project_id.in_(list(commits))))))
    wrong = {project: found.get(project)
             for project, count in commits.items()
             if found.get(project, (0, 0)) != (count, 0)}
    if wrong:
        for row in rows:
            row.update(failed=True, check='books: %s' % sorted(wrong)[:2])


# -- the worker process -----------------------------------------------------

def _worker(script, target, project, seconds, iterations, barrier, results):
    """One load process: ``script``'s loop for at most ``iterations`` loops
    or ``seconds``; puts latencies by operation, errors and commits on
    ``results``."""
    latencies, counts = {}, {'errors': 0, 'commits': 0}

    def timed(operation, call):
        started = time.perf_counter()
        result = call()
        latencies.setdefault(operation, []).append(
            time.perf_counter() - started)
        return result

    loop = _SCRIPTS[script](target, project, timed, counts)
    try:
        loop()  # connect, warm the caches and make the usage rows, untimed
    except Exception:  # counted: the check column reports it
        counts['errors'] += 1
    latencies.clear()
    barrier.wait(timeout=300)
    deadline = time.monotonic() + seconds
    for _ in range(iterations):
        if time.monotonic() >= deadline:
            break
        try:
            loop()
        except Exception:  # counted: the check column reports it
            counts['errors'] += 1
    for operation in _OPERATIONS[script]:
        latencies.setdefault(operation, [])
    results.put(dict(latencies=latencies, project=project, **counts))


def _root_script(url, project, timed, counts):
    http = requests.Session()

    def loop():
        timed(ROOT, lambda: http.get(url + '/', timeout=30)
              ).raise_for_status()
    return loop


def _rest_script(url, project, timed, counts):
    http = requests.Session()
    http.headers.update(HEADERS)

    def loop():
        made = timed(RESERVE_REST, lambda: http.post(
            url + '/v1/reservations', timeout=30,
            json={'project_id': project, 'deltas': {'FPGA': 1}}))
        made.raise_for_status()
        timed(COMMIT_REST, lambda: http.post(
            url + '/v1/reservations/commit', timeout=30,
            json={'project_id': project,
                  'reservations': made.json()['reservations']})
              ).raise_for_status()
        counts['commits'] += 1
        timed(USAGE, lambda: http.get(
            url + '/v1/quota_usages/' + project, timeout=30)
              ).raise_for_status()
    return loop


def _rpc_client(target):
    url, name = target
    benchmarks.use_database(url)
    rpc._use_bus(name)


def _echo_script(target, project, timed, counts):
    _rpc_client(target)
    client = oslo_messaging.get_rpc_client(
        conductor_rpc.get_transport(),
        oslo_messaging.Target(topic=CONF.conductor.topic + '-echo'),
        timeout=30)

    def loop():
        timed(ECHO, lambda: client.call({}, 'echo', value='ping'))
    return loop


def _rpc_script(target, project, timed, counts):
    _rpc_client(target)
    api = rpcapi.ConductorAPI(timeout=30)
    context = cyquota_context.get_admin_context()

    def loop():
        made = timed(RESERVE_RPC, lambda: api.reserve(
            context, project, {'FPGA': 1}, expire=3600))
        timed(COMMIT_RPC, lambda: api.commit(context, project, made))
        counts['commits'] += 1
    return loop


_SCRIPTS = {'root': _root_script, 'rest': _rest_script,
            'echo': _echo_script, 'rpc': _rpc_script}
_OPERATIONS = {'root': (ROOT,), 'rest': (RESERVE_REST, COMMIT_REST, USAGE),
               'echo': (ECHO,), 'rpc': (RESERVE_RPC, COMMIT_RPC)}
