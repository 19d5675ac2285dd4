"""Leases benchmark: lease create latency with the usage-enforcement
filters, and with a long history of ended leases; a page of the lease
list as the lease table grows.

For every backend, in one throw-away database, one process creates leases
through ``LEASES.create`` (one FPGA for an hour, a day ahead, on a device
chosen by ``member_of``), each then ended and purged untimed so that every
create meets the same books. Five cases take turns, round after round, so
that the machine's drift touches all alike:

* no filter, ``MaxLeaseDurationFilter``, and ``ExternalServiceFilter``
  against a threaded WSGI server on 127.0.0.1 in this process that answers
  every POST with 204 (the filter's HTTP round trip, no policy);
* no filter, on devices and a project with 10 ENDED leases of history, and
  with 1,000 (bulk-inserted rows). The target: within 2x, because the
  calendar reads only live leases (``PENDING``, ``ACTIVE``).

Then, in another database, an admin's ``GET /v1/leases?limit=1000``
(the WSGI app in this process) with 1,000 and with 100,000 leases (bulk
rows, a device each), and after 50,000: within 2x, in as many queries, as
an index serves the order and a page's parts are read for its ids at once.
Last, creates and sweeps as the live calendar grows (``lease_calendar``).
"""

import contextlib
import datetime
import json
import socketserver
import threading
import time
import uuid as uuidlib
from wsgiref import simple_server

import sqlalchemy as sa
import webob

import benchmarks
from benchmarks import lease_calendar
from benchmarks import lease_rows
from cyquota.api import app
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import placement_models
from cyquota import leases
from cyquota.placement import aggregates
from cyquota.placement import inventories
from cyquota.placement import providers
from cyquota import quota

TITLE = ('Leases: create latency with filters, with ended history and as '
         'the live calendar grows; sweeps; a page of the lease list')
COLUMNS = [
    ('backend', 'backend', '{}'),
    ('case', 'case', '{}'),
    ('p50', 'p50 ms', '{:.2f}'),
    ('p99', 'p99 ms', '{:.2f}'),
    ('ratio', 'p50 / p50 of base', '{:.2f}'),
    ('base', 'base', '{}'),
    ('per_lease', 'ms per lease', '{:.2f}'),
    ('queries', 'queries', '{}'),
    ('check', 'books after the run', '{}'),
]
RESOURCE = 'FPGA'
#: History sizes of ENDED leases on the measured devices.
HISTORY = (10, 1000)
#: The target of p50 with 1,000 ended leases over p50 with 10.
TARGET = 2.0
MAX_DURATION = 7 * 24 * 3600
NO_FILTER = 'no filter'
MAX_LEASE = 'MaxLeaseDurationFilter'
EXTERNAL = 'ExternalServiceFilter (204)'
FILTER_CASES = (NO_FILTER, MAX_LEASE, EXTERNAL)
#: The page, and the sizes of the lease table it is read from.
PAGE = 1000
LISTED = (1000, 100000)
ADMIN = {'X-Project-Id': 'admin-project', 'X-Roles': 'admin'}


def _history_case(size):
    return 'history: %s ENDED leases' % format(size, ',')


def _page_case(size, after=None):
    return 'GET /v1/leases page of %s from %s leases%s' % (
        format(PAGE, ','), format(size, ','),
        ', after %s of them' % format(after, ',') if after else '')


def run(args, progress):
    """Measure every backend in ``args.backends``."""
    creates, rounds = (5, 2) if args.quick else (25, 4)
    rows = []
    with _policy_service() as service:
        for backend, url in benchmarks.databases('leases', args.backends,
                                                 progress):
            if url is None:
                rows.append(dict(benchmarks.UNREACHABLE, backend=backend))
                continue
            try:
                rows.extend(_measure(backend, service, creates, rounds,
                                     progress))
            finally:
                _configure(NO_FILTER, service)
    for backend, url in benchmarks.databases('leases', args.backends,
                                             progress):
        if url is not None:
            rows.extend(_measure_pages(backend, 5 if args.quick else 25,
                                       progress))
    return rows + lease_calendar.run(args, progress)


def summary(rows):
    """Lines under the table: the history and page targets, met or
    missed; then the calendar's."""
    calendar_lines = lease_calendar.summary(rows)
    rows = lease_calendar.others(rows)
    lines = ['  %s: no measurement (%s)' % (row['backend'], row['check'])
             for row in rows if 'p50' not in row]
    for case, target in (
            (_history_case(HISTORY[-1]), 'p50 with %s ended leases within '
             '%.0fx of %d' % (format(HISTORY[-1], ','), TARGET, HISTORY[0])),
            (_page_case(LISTED[-1]), 'a page from %s leases within %.0fx of '
             'one from %s, in as many queries' % (
                 format(LISTED[-1], ','), TARGET, format(LISTED[0], ',')))):
        lines.append('target: ' + target)
        lines += ['  %s: %s: %.2fx, %s' % (
            row['backend'], row['case'], row['ratio'],
            'target met' if row['ratio'] <= TARGET and not row['failed']
            else 'MISSED') for row in rows
            if row.get('case', '').startswith(case)]
    return lines + calendar_lines


def plot(rows, ax):
    """p50 and p99 of each case, grouped by backend; beside them, the
    calendar's create p50 against live leases."""
    lease_calendar.plot(rows, ax)
    measured = [r for r in lease_calendar.others(rows) if 'p50' in r]
    labels = ['%s\n%s' % (r['backend'], r['case'].replace(
        ' ENDED', '').replace('GET /v1/leases ', '')) for r in measured]
    positions = range(len(measured))
    ax.bar([p - 0.2 for p in positions], [r['p50'] for r in measured],
           width=0.4, label='p50')
    ax.bar([p + 0.2 for p in positions], [r['p99'] for r in measured],
           width=0.4, label='p99')
    ax.set_xticks(list(positions), labels, rotation=60, ha='right',
                  fontsize=6)
    ax.set_ylabel('lease create; GET page, ms')
    ax.legend()


# -- the policy service ----------------------------------------------------

class _ThreadingServer(socketserver.ThreadingMixIn,
                       simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _policy_service():
    """A policy service on 127.0.0.1 that allows everything (204); yields
    ``{"url", "calls": {path: count}}``."""
    calls = {}
    lock = threading.Lock()

    def app(environ, start_response):
        length = int(environ.get('CONTENT_LENGTH') or 0)
        environ['wsgi.input'].read(length)
        with lock:
            path = environ['PATH_INFO']
            calls[path] = calls.get(path, 0) + 1
        start_response('204 No Content', [])
        return [b'']

    server = simple_server.make_server(
        '127.0.0.1', 0, app, server_class=_ThreadingServer,
        handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield dict(url='http://127.0.0.1:%d' % server.server_port,
                   calls=calls)
    finally:
        server.shutdown()
        server.server_close()


def _configure(case, service):
    """The filters of ``case``; the chain is loaded again on next use."""
    enabled = {MAX_LEASE: ['MaxLeaseDurationFilter'],
               EXTERNAL: ['ExternalServiceFilter']}.get(case, [])
    if enabled:
        CONF.set_override('enabled_filters', enabled, 'enforcement')
        CONF.set_override('max_lease_duration', MAX_DURATION, 'enforcement')
        CONF.set_override('endpoint_url', service['url'],
                          'enforcement_external')
    else:
        for name, group in (('enabled_filters', 'enforcement'),
                            ('max_lease_duration', 'enforcement'),
                            ('endpoint_url', 'enforcement_external')):
            CONF.clear_override(name, group)
    leases.LEASES.reset()


# -- the books ---------------------------------------------------------------

def _device(ctx, name, parent, size):
    """A device of ``size`` FPGAs in an aggregate of its own; returns
    ``(provider id, member_of value)``."""
    uuid = providers.create(ctx, name, parent_provider_uuid=parent).uuid
    inventories.set_all(ctx, uuid, providers.get(ctx, uuid).generation,
                        {RESOURCE: {'total': size}})
    aggregate = str(uuidlib.uuid4())
    aggregates.set_for_provider(ctx, uuid,
                                providers.get(ctx, uuid).generation,
                                [aggregate])
    return providers.get(ctx, uuid).id, aggregate


def _add_history(provider_id, project, count, start, end, first=0):
    """``count`` ENDED leases of ``project`` on the device (numbered from
    ``first``, a millisecond apart), in bulk, 10,000 at a time; their
    windows overlap the measured ones (only their status leaves them out
    of the calendar)."""
    now = models.utcnow()
    window = dict(start_date=start, end_date=end, status=lease_models.ENDED)
    for chunk in range(first, first + count, 10000):
        made = [dict(window, id='%s-%08d' % (project[:27], n),
                     created_at=now + datetime.timedelta(milliseconds=n))
                for n in range(chunk, min(chunk + 10000, first + count))]
        with db_api.get_engine().begin() as conn:
            conn.execute(lease_models.Lease.__table__.insert(), [
                dict(m, project_id=project, user_id=None, name=m['id'])
                for m in made])
            conn.execute(lease_models.LeaseReservation.__table__.insert(), [
                dict(m, lease_id=m['id'], position=0, project_id=project,
                     root_id=project, resource=RESOURCE, amount=1,
                     member_of='[]', member_key=None) for m in made])
            conn.execute(placement_models.LeaseAllocation.__table__.insert(),
                         [dict(window, lease_id=m['id'],
                               lease_reservation_id=m['id'],
                               created_at=m['created_at'],
                               resource_provider_id=provider_id,
                               resource_class=RESOURCE, amount=1)
                          for m in made])


# -- measuring ---------------------------------------------------------------

def _measure(backend, service, creates, rounds, progress):
    ctx = cyquota_context.get_admin_context()
    quota.QUOTAS.limits.set_registered_limit(ctx, RESOURCE, 10 ** 6)
    host = providers.create(ctx, 'cn1').uuid
    start = (datetime.datetime.now(datetime.timezone.utc)
             + datetime.timedelta(days=1)).replace(microsecond=0)
    end = start + datetime.timedelta(hours=1)
    naive = (start.replace(tzinfo=None), end.replace(tzinfo=None))
    progress.step('leases: %s: %s ended leases of history' % (
        backend, ' and '.join(format(n, ',') for n in HISTORY)))
    # Each case: its project, the member_of of its device, its filters.
    cases = {}
    for case in FILTER_CASES:
        _, member_of = _device(ctx, 'dev-%s' % case.split()[0], host, 100)
        cases[case] = ('bench-filters', member_of, case)
    for size in HISTORY:
        provider_id, member_of = _device(ctx, 'dev-history-%d' % size, host,
                                         100)
        project = 'bench-history-%d' % size
        _add_history(provider_id, project, size, *naive)
        cases[_history_case(size)] = (project, member_of, NO_FILTER)
    body = dict(start_date=start.isoformat(), end_date=end.isoformat())
    before = dict(service['calls'])

    def create(project, member_of):
        return leases.LEASES.create(ctx, project, dict(body, reservations=[
            {'resource_type': 'accelerator:' + RESOURCE, 'amount': 1,
             'member_of': [member_of]}]))

    def forget(made):
        leases.LEASES.delete(ctx, made['id'])
        lease_rows.purge([made['id']])

    timings = {case: [] for case in cases}
    problems = []
    for turn in range(rounds):
        progress.step('leases: %s: round %d of %d' % (backend, turn + 1,
                                                      rounds))
        for case, (project, member_of, filters) in cases.items():
            _configure(filters, service)
            # Untimed: loads the filter chain, warms connections and caches.
            forget(create(project, member_of))
            for _ in range(creates):
                began = time.perf_counter()
                made = create(project, member_of)
                timings[case].append((time.perf_counter() - began) * 1000)
                forget(made)
                if made['status'] != lease_models.PENDING:
                    problems.append('%s: lease %s' % (case, made['status']))
    _configure(NO_FILTER, service)
    problems += _check(ctx, cases, service, before,
                       (creates + 1) * rounds)
    rows = []
    for case in cases:
        rows.append(dict(backend=backend, case=case,
                         **lease_rows.percentiles(timings[case])))
    base = {r['case']: r['p50'] for r in rows}
    for row in rows:
        reference = (_history_case(HISTORY[0])
                     if row['case'].startswith('history') else NO_FILTER)
        row['base'] = reference
        row['ratio'] = row['p50'] / base[reference]
        row['check'] = '; '.join(problems) or 'ok'
        row['failed'] = bool(problems)
    return rows


def _check(ctx, cases, service, before, made):
    """What is wrong after the run: every project's counts back to zero,
    no live lease left, the histories at their sizes, and the policy
    service asked once per create (and told once per end) with its
    filter."""
    problems = []
    for project in sorted({project for project, _, _ in cases.values()}):
        usage = quota.QUOTAS.get_project_usage(ctx, project)[RESOURCE]
        counts = tuple(usage[k] for k in ('used', 'reserved', 'leased',
                                          'promised'))
        if counts != (0, 0, 0, 0):
            problems.append('%s holds %s' % (project, counts))
    live = sum(lease_rows.count(lease_models.Lease.__table__,
                                status=status)
               for status in lease_models.LIVE)
    if live:
        problems.append('%d live leases' % live)
    for size in HISTORY:
        found = lease_rows.count(lease_models.Lease.__table__,
                                 project_id='bench-history-%d' % size)
        if found != size:
            problems.append('history of %d has %d leases' % (size, found))
    asked = {path: n - before.get(path, 0)
             for path, n in service['calls'].items()}
    if asked != {'/check-create': made, '/on-end': made}:
        problems.append('the policy service saw %s' % json.dumps(asked))
    return problems


def _measure_pages(backend, gets, progress):
    """p50 and p99 of an admin's ``GET /v1/leases?limit=1000``, and the
    statements it sends, with 1,000 leases, then 100,000 (and the page
    after the 50,000th)."""
    ctx = cyquota_context.get_admin_context()
    provider_id = providers.create(ctx, 'page-device').id
    application = app.setup_app()
    sent = []
    sa.event.listen(db_api.get_engine(), 'before_cursor_execute',
                    lambda *args: sent.append(1))
    rows, made = [], 0
    for size, after in [(n, None) for n in LISTED] + [(LISTED[-1], 50000)]:
        case = _page_case(size, after)
        progress.step('leases: %s: %s' % (backend, case))
        _add_history(provider_id, 'bench-pages', size - made,
                     datetime.datetime(2026, 1, 1),
                     datetime.datetime(2026, 1, 2), first=made)
        made = size
        # As autovacuum (and InnoDB) would have after a gradual growth:
        # fresh statistics, not those of a table a hundred times smaller.
        with db_api.get_engine().begin() as conn:
            conn.exec_driver_sql(
                'ANALYZE TABLE leases, lease_reservations, lease_allocations'
                if backend == 'mysql' else 'ANALYZE').close()
        url = '/v1/leases?limit=%d' % PAGE + (
            '&marker=bench-pages-%08d' % after if after else '')
        timings, queries, problems = [], set(), set()
        for turn in range(gets + 1):  # the first one warms up
            del sent[:]
            began = time.perf_counter()
            answer = webob.Request.blank(url, headers=ADMIN).get_response(
                application)
            timings.append((time.perf_counter() - began) * 1000)
            # A marker costs one query more: the position it names.
            queries.add(len(sent) - (1 if after else 0))
            if answer.status_int != 200 or len(answer.json['leases']) != PAGE:
                problems.add('answered %s' % answer.status)
        rows.append(dict(backend=backend, case=case, base=_page_case(
            LISTED[0]), queries=len(sent), counts=queries,
            problems=problems, **lease_rows.percentiles(timings[1:])))
    for row in rows:
        row['ratio'] = row['p50'] / rows[0]['p50']
        if row.pop('counts') != {rows[0]['queries']}:
            row['problems'].add('the query count varies')
        row['check'] = '; '.join(sorted(row.pop('problems'))) or 'ok'
        row['failed'] = row['check'] != 'ok'
    return rows
