"""RPC benchmark: the round trip of a reserve over
RabbitMQ (``ConductorAPI.reserve``), next to a bare oslo.messaging echo
call on the same broker, measured in the same run.

For every server backend (PostgreSQL, MariaDB: throw-away databases) one
spawned server process serves both, on topics of the run's own: an echo
endpoint (no serializer, no database) and a conductor
(``ConductorService``). This process calls them with 1 and 8 client
threads for a fixed time each; every thread reserves one ``FPGA`` for its
own project, so the figure is the round trip, not a contended row. A
``QUOTAS.reserve`` in this process (one transaction, no RPC) shows the
database's share, in a tight loop and paced: the client busy, before each
call, as long as an echo takes, so that the database idles between two
reserves as long as it does between two reserves over RPC (a commit after
an idle moment can cost more). Afterwards the reservation rows must match
the reserves.
"""

import multiprocessing
import os
import threading
import time
import uuid

import kombu
import oslo_messaging
import sqlalchemy as sa

import benchmarks
from cyquota.conductor import rpc
from cyquota.conductor import rpcapi
from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import quota

TITLE = ('RPC: reserve round trip over RabbitMQ, next to a bare '
         'oslo.messaging echo')
COLUMNS = [
    ('call', 'call', '{}'),
    ('backend', 'database', '{}'),
    ('clients', 'clients', '{}'),
    ('calls', 'calls', '{}'),
    ('p50', 'p50 ms', '{:.2f}'),
    ('p99', 'p99 ms', '{:.2f}'),
    ('rate', 'calls/s', '{:.0f}'),
    ('p50_ratio', 'p50/echo p50', '{:.2f}'),
    ('rate_ratio', 'rate/echo rate', '{:.2f}'),
    ('check', 'check', '{}'),
]
CLIENTS = (1, 8)
SERVER_BACKENDS = ('postgresql', 'mysql')
RABBIT_URL = os.environ.get('CYQUOTA_TEST_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')
ECHO = 'echo (bare oslo.messaging)'
DIRECT = 'QUOTAS.reserve (no RPC)'
PACED = 'QUOTAS.reserve (no RPC), paced'
RESERVE = 'ConductorAPI.reserve'
_SERVER_START_TIMEOUT = 120


def run(args, progress):
    """Measure every server backend in ``args.backends``."""
    seconds = 0.3 if args.quick else 3.0
    rows = []
    try:
        with kombu.Connection(_amqp_url(RABBIT_URL),
                              connect_timeout=5) as conn:
            conn.ensure_connection(max_retries=1)
    except Exception:  # any client error: the broker is not there
        progress.step('rpc: RabbitMQ at %s not reachable' % RABBIT_URL)
        return [dict(call=RESERVE, failed=True,
                     check='RabbitMQ not reachable')]
    servers = [b for b in args.backends if b in SERVER_BACKENDS]
    for backend, url in benchmarks.databases('rpc', servers, progress):
        if url is None:
            rows.append(dict(benchmarks.UNREACHABLE, call=RESERVE,
                             backend=backend))
            continue
        rows.extend(_measure(backend, url, seconds, progress))
    return rows


def summary(rows):
    """Lines under the table: what a reserve adds to a bare round trip."""
    lines = ['the embedded SQLite is not served over RabbitMQ: not measured']
    by_key = {(r.get('call'), r.get('backend'), r.get('clients')): r
              for r in rows if 'p50' in r}
    for backend in SERVER_BACKENDS:
        echo = by_key.get((ECHO, backend, 1))
        reserve = by_key.get((RESERVE, backend, 1))
        for name, alone in ((DIRECT, 'alone'), (PACED, 'alone, paced')):
            direct = by_key.get((name, backend, 1))
            if not (echo and direct and reserve):
                continue
            bound = echo['p50'] + direct['p50'] + 1
            lines.append(
                '%s, 1 client: reserve over RPC p50 %.2f ms = echo %.2f ms '
                '+ %.2f ms (a reserve transaction %s: %.2f ms); target '
                '<= echo + reserve %s + 1 ms = %.2f ms: %s' % (
                    backend, reserve['p50'], echo['p50'],
                    reserve['p50'] - echo['p50'], alone, direct['p50'],
                    alone, bound,
                    'met' if reserve['p50'] <= bound else 'NOT met'))
    return lines


def plot(rows, ax):
    """p50 and p99 of every call, clients and database."""
    rows = [row for row in rows if 'p50' in row]
    x = range(len(rows))
    width = 0.38
    ax.bar([i - width / 2 for i in x], [r['p50'] for r in rows], width,
           label='p50')
    ax.bar([i + width / 2 for i in x], [r['p99'] for r in rows], width,
           label='p99')
    ax.set_xticks(list(x), ['%s\n%s, %d client%s' % (
        r['call'].split(' (')[0], r['backend'], r['clients'],
        '' if r['clients'] == 1 else 's') for r in rows], fontsize=7)
    ax.set_ylabel('round trip, ms')
    ax.legend()


def _amqp_url(url):
    return 'amqp://' + url.split('://', 1)[1]


class _Echo:
    """A bare endpoint: no database, no serializer."""

    def echo(self, ctxt, value):
        return value


def _use_bus(name):
    CONF.set_override('transport_url', RABBIT_URL)
    CONF.set_override('control_exchange', name)
    CONF.set_override('topic', name, 'conductor')
    rpc.reset()


def _serve(url, name, ready, stop):
    """The server process: the echo endpoint and a conductor."""
    benchmarks.use_database(url)
    _use_bus(name)
    conductor = conductor_service.ConductorService(host='bench-conductor')
    echo = oslo_messaging.get_rpc_server(
        rpc.get_transport(),
        oslo_messaging.Target(topic=name + '-echo', server='bench-echo'),
        [_Echo()])
    conductor.start()
    echo.start()
    ready.set()
    stop.wait()
    echo.stop()
    conductor.stop()
    echo.wait()
    conductor.wait()
    rpc.reset()


def _delete_bus(name):
    with kombu.Connection(_amqp_url(RABBIT_URL)) as conn:
        channel = conn.channel()
        for queue in (name, name + '.bench-conductor', name + '-echo',
                      name + '-echo.bench-echo'):
            channel.queue_delete(queue)
        channel.exchange_delete(name)


def _timed(call, clients, seconds, pause=0):
    """Run ``call(thread_index)`` in ``clients`` threads for ``seconds``,
    each call after ``pause`` seconds busy (untimed); returns (sorted
    latencies in s, wall time, errors)."""
    latencies = [[] for _ in range(clients)]
    errors = [0] * clients
    barrier = threading.Barrier(clients + 1)

    def loop(index):
        barrier.wait()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            benchmarks.busy(pause)
            started = time.perf_counter()
            try:
                call(index)
            except Exception:  # counted: the check column reports it
                errors[index] += 1
                continue
            latencies[index].append(time.perf_counter() - started)

    threads = [threading.Thread(target=loop, args=(i,))
               for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    return sorted(sum(latencies, [])), wall, sum(errors)


def _row(call, backend, clients, latencies, wall, errors):
    def ms(fraction):
        index = min(len(latencies) - 1,
                    int(round(fraction * (len(latencies) - 1))))
        return latencies[index] * 1000
    row = dict(call=call, backend=backend, clients=clients,
               calls=len(latencies), rate=len(latencies) / wall,
               errors=errors, check='ok' if not errors else
               '%d errors' % errors, failed=bool(errors))
    if latencies:
        row.update(p50=ms(0.50), p99=ms(0.99))
    return row


def _measure(backend, url, seconds, progress):
    name = 'cyquota-bench-%s' % uuid.uuid4().hex[:12]
    spawn = multiprocessing.get_context('spawn')
    ready, stop = spawn.Event(), spawn.Event()
    server = spawn.Process(target=_serve, args=(url, name, ready, stop))
    _use_bus(name)
    progress.step('rpc: %s: starting the server process' % backend)
    server.start()
    try:
        if not ready.wait(_SERVER_START_TIMEOUT):
            return [dict(call=RESERVE, backend=backend, failed=True,
                         check='server process did not start')]
        return _measure_calls(backend, seconds, progress)
    finally:
        stop.set()
        server.join(timeout=60)
        if server.is_alive():
            server.kill()
        rpc.reset()
        for option in ('transport_url', 'control_exchange'):
            CONF.clear_override(option)
        CONF.clear_override('topic', 'conductor')
        _delete_bus(name)


def _measure_calls(backend, seconds, progress):
    echo_client = oslo_messaging.get_rpc_client(
        rpc.get_transport(),
        oslo_messaging.Target(topic=CONF.conductor.topic + '-echo'),
        timeout=30)
    api = rpcapi.ConductorAPI(timeout=30)
    context = cyquota_context.get_admin_context()

    def echo(index):
        echo_client.call({}, 'echo', value='ping')

    def direct(index):
        quota.QUOTAS.reserve(context, 'direct-%d' % index, {'FPGA': 1},
                             expire=3600)

    def reserve(index):
        api.reserve(context, 'rpc-%d' % index, {'FPGA': 1}, expire=3600)

    plan = [(ECHO, echo, clients) for clients in CLIENTS]
    plan += [(DIRECT, direct, 1), (PACED, direct, 1)]
    plan += [(RESERVE, reserve, clients) for clients in CLIENTS]
    rows, echoes = [], {}
    for call, function, clients in plan:
        function(0)  # connect and warm up, untimed
        progress.step('rpc: %s: %s, %d client(s)' % (backend, call, clients))
        pause = echoes[1].get('p50', 0) / 1000 if call == PACED else 0
        row = _row(call, backend, clients,
                   *_timed(function, clients, seconds, pause))
        if call == ECHO:
            echoes[clients] = row
        elif 'p50' in row and 'p50' in echoes.get(clients, {}):
            row['p50_ratio'] = row['p50'] / echoes[clients]['p50']
            row['rate_ratio'] = row['rate'] / echoes[clients]['rate']
        rows.append(row)
    _check_books(rows)
    return rows


def _check_books(rows):
    """Every timed (and warm-up) reserve left exactly one reserved row."""
    reservations = models.Reservation.__table__
    with db_api.get_engine().connect() as conn:
        held = conn.execute(
            sa.select(sa.func.count()).select_from(reservations)
            .where(reservations.c.status == models.RESERVED)).scalar()
    reserves = [row for row in rows if row['call'] != ECHO]
    expected = sum(row['calls'] for row in reserves) + len(reserves)
    if held != expected:
        for row in reserves:
            row.update(failed=True, check='%d reserved rows, %d reserves'
                                          % (held, expected))
