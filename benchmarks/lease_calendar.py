"""The lease calendar, part of the ``leases`` benchmark: what a lease
create and the conductor's sweeps cost as the calendar of live leases
grows.

For every backend, one throw-away database per calendar size (10, 1,000,
10,000 and 100,000 live leases; ``--quick``: 10, 100, 1,000), each filled
in bulk by ``lease_fill`` (1,000 devices, ``--quick``: 100; 200 projects;
leases spread over 90 days) and its books checked, so that only the
calendar's size differs.
A database of its own per size, because a calendar that reads the whole
table would read every size's leases from a shared one.

* ``LEASES.create`` of one FPGA (no ``member_of``: the first device with
  room) for a project of the calendar, its window at one of a fixed list
  of seeded points of the 90 days (every size meets the same points, so a
  calendar that reads the whole future shows it); each lease then ended
  and purged untimed, so the calendar keeps its size. The sizes take
  turns for several rounds, each block after an untimed create. In the
  calendar of 10,000 (``--quick``: the second largest), a create of 16
  reservations of one FPGA beside each create of one. Target: 100,000
  live leases within 1.2x of 10; 16 reservations within 1.5x of 1.
* ``LEASES.start_due`` and ``LEASES.end_due`` of a batch of 1,000
  (``--quick``: 20) due leases added to the calendars of 10 and of the
  largest size: pending leases one to a device whose start came 20 s ago
  and that end a second later (the end sweep waits, untimed, for it).
  Milliseconds per lease; target: the largest calendar within 1.2x of 10.
* ``queries``: the statements a create sends (with 1 and with 16
  reservations), or a sweep per lease. Target: as many with 16
  reservations as with 1, at every size.
"""

import collections
import contextlib
import datetime
import random
import statistics
import time

import benchmarks
from benchmarks import lease_fill
from benchmarks import lease_rows
from benchmarks import report
from cyquota import context as cyquota_context
from cyquota.db import lease_models
from cyquota.db import models
from cyquota import leases

SIZES = (10, 1000, 10000, 100000)
QUICK_SIZES = (10, 100, 1000)
QUICK_DEVICES = 100
#: The targets: the largest calendar over 10 live leases; 16 reservations
#: over 1.
FLAT = 1.2
SIXTEEN = 1.5
MANY = 16
PROJECT = lease_fill.project(0)
SWEEPS = ('start_due', 'end_due')


def _n(number):
    return format(number, ',')


def create_case(size, reservations=1):
    """The case of a create of ``reservations`` at ``size`` live
    leases."""
    return 'create, %d reservation%s, %s live leases' % (
        reservations, 's' if reservations > 1 else '', _n(size))


def sweep_case(sweep, batch, size):
    """The case of a ``sweep`` of ``batch`` due leases at ``size`` live
    leases."""
    return '%s of %s due leases, %s live leases' % (sweep, _n(batch),
                                                    _n(size))


def others(rows):
    """The rows of the ``leases`` benchmark that are not the calendar's."""
    return [row for row in rows if 'live' not in row]


class _Calendar:
    """A calendar of ``size`` live leases in a database of its own."""

    def __init__(self, size, url, planned, device_ids):
        self.size = size
        self.url = url
        self.planned = planned
        self.device_ids = device_ids
        self.problems = []

    def statuses(self):
        """``{status: leases}`` the calendar holds."""
        return collections.Counter(p.status for p in self.planned)

    def use(self, statements):
        """Point cyquota at this calendar; ``statements`` watch it."""
        benchmarks.use_database(self.url)
        leases.LEASES.reset()
        statements.listen()


def run(args, progress):
    """Measure every backend in ``args.backends``; a backend whose server
    cannot be reached has no rows here (the ``leases`` rows say so)."""
    sizes = QUICK_SIZES if args.quick else SIZES
    shape = (dict(rounds=2, creates=3, batch=20, sweeps=1,
                  devices=QUICK_DEVICES) if args.quick
             else dict(rounds=4, creates=10, batch=1000, sweeps=2,
                       devices=lease_fill.DEVICES))
    rows = []
    for backend in args.backends:
        rows.extend(_backend(backend, sizes, progress, **shape))
    return rows


def _points(count, now):
    """``count`` seeded windows ``(start, end)`` (ISO 8601) of one to 24
    hours, starting anywhere from a day ahead to 89 days ahead."""
    rng = random.Random(2028)
    points = []
    for _ in range(count):
        start = (now + lease_fill.LEAD + datetime.timedelta(
            minutes=rng.randrange(88 * 24 * 60))).replace(
                tzinfo=datetime.timezone.utc)
        end = start + datetime.timedelta(minutes=rng.randrange(60, 24 * 60))
        points.append((start.isoformat(), end.isoformat()))
    return points


def _backend(backend, sizes, progress, rounds, creates, batch, sweeps,
             devices):
    now = models.utcnow().replace(microsecond=0)
    planned = lease_fill.plan(sizes[-1], now, devices)
    statements = lease_rows.Statements()
    with contextlib.ExitStack() as stack:
        stack.callback(statements.stop)
        calendars = []
        for size in sizes:
            url = stack.enter_context(benchmarks.throwaway_database(backend))
            if url is None:
                return []
            began = time.perf_counter()
            calendar = _Calendar(size, url, planned[:size],
                                 lease_fill.fill(planned[:size], now,
                                                 devices))
            lease_fill.analyze(backend)
            calendar.problems += ['fill: ' + problem for problem in
                                  lease_fill.check(calendar.statuses())]
            progress.step('leases: %s: a calendar of %s live leases, filled '
                          'and checked in %.1f s' % (
                              backend, _n(size), time.perf_counter() - began))
            calendars.append(calendar)
        rows = _creates(backend, calendars, _points(rounds * creates + 1, now),
                        rounds, statements, progress)
        rows += _sweeps(backend, (calendars[0], calendars[-1]), batch, sweeps,
                        statements, progress)
        for calendar in calendars:
            calendar.use(statements)
            calendar.problems += ['after the run: ' + problem for problem in
                                  lease_fill.check(calendar.statuses())]
    by_size = {calendar.size: calendar for calendar in calendars}
    for row in rows:
        problems = by_size[row['live']].problems
        row['check'] = '; '.join(problems) or 'ok'
        row['failed'] = bool(problems)
    return rows


def _create(ctx, point, reservations):
    start, end = point
    return leases.LEASES.create(ctx, PROJECT, {
        'start_date': start, 'end_date': end,
        'reservations': [{'resource_type': 'accelerator:'
                          + lease_fill.RESOURCE, 'amount': 1}]
        * reservations})


def _forget(ctx, made, reservations, calendar):
    """End and purge a measured lease, after checking what it holds."""
    held = sum(a['amount'] for r in made['reservations']
               for a in r['allocations'])
    if made['status'] != lease_models.PENDING or held != reservations:
        calendar.problems.append('a create answered %s holding %d'
                                 % (made['status'], held))
    leases.LEASES.delete(ctx, made['id'])
    lease_rows.purge([made['id']])


def _counted(counts):
    """A set of statement counts as one figure, or its range."""
    low, high = min(counts), max(counts)
    return low if low == high else '%s..%s' % (low, high)


def _creates(backend, calendars, points, rounds, statements, progress):
    """Rows of the timed creates: the sizes take turns, round after round;
    one create of 16 reservations beside each of 1 in the second largest
    calendar."""
    ctx = cyquota_context.get_admin_context()
    many_at = calendars[-2] if len(calendars) > 1 else calendars[-1]
    creates = (len(points) - 1) // rounds
    timings = collections.defaultdict(list)
    sent = collections.defaultdict(set)
    for turn in range(rounds):
        progress.step('leases: %s: creates, round %d of %d'
                      % (backend, turn + 1, rounds))
        for calendar in calendars[::1 if turn % 2 == 0 else -1]:
            calendar.use(statements)
            kinds = (1, MANY) if calendar is many_at else (1,)
            for reservations in kinds:  # untimed: warms the new engine
                _forget(ctx, _create(ctx, points[-1], reservations),
                        reservations, calendar)
            for point in points[turn * creates:(turn + 1) * creates]:
                for reservations in kinds:
                    statements.sent = 0
                    began = time.perf_counter()
                    made = _create(ctx, point, reservations)
                    timings[calendar.size, reservations].append(
                        (time.perf_counter() - began) * 1000)
                    sent[calendar.size, reservations].add(statements.sent)
                    _forget(ctx, made, reservations, calendar)
    rows = []
    smallest = calendars[0].size
    for (size, reservations), measured in timings.items():
        base = (smallest, 1) if reservations == 1 else (size, 1)
        rows.append(dict(
            backend=backend, case=create_case(size, reservations), live=size,
            reservations=reservations, base=create_case(*base),
            queries=_counted(sent[size, reservations]),
            **lease_rows.percentiles(measured)))
        rows[-1]['base_p50'] = lease_rows.percentiles(timings[base])['p50']
        rows[-1]['ratio'] = rows[-1]['p50'] / rows[-1]['base_p50']
    return sorted(rows, key=lambda r: (r['reservations'], r['live']))


def _sweeps(backend, calendars, batch, sweeps, statements, progress):
    """Rows of the conductor's sweeps of a due batch, per lease, in the
    ``calendars`` (the smallest and the largest) by turns."""
    ctx = cyquota_context.get_admin_context()
    per_lease = collections.defaultdict(list)
    sent = collections.defaultdict(set)
    for turn in range(sweeps):
        for calendar in calendars[::1 if turn % 2 == 0 else -1]:
            progress.step('leases: %s: start and end sweeps of %s due leases '
                          'among %s live' % (backend, _n(batch),
                                             _n(calendar.size)))
            calendar.use(statements)
            now = models.utcnow()
            due = lease_fill.due(batch, now, turn, len(calendar.device_ids))
            lease_fill.add_due(calendar.planned, due, calendar.device_ids,
                               now)
            for sweep in SWEEPS:
                if sweep == 'end_due':  # until the batch's end has come
                    time.sleep(max(0, (due[0].end - models.utcnow())
                                   .total_seconds()) + 0.05)
                statements.sent = 0
                began = time.perf_counter()
                done = getattr(leases.LEASES, sweep)(ctx)
                per_lease[calendar.size, sweep].append(
                    (time.perf_counter() - began) * 1000 / batch)
                sent[calendar.size, sweep].add(round(statements.sent / batch,
                                                     1))
                if done != batch:
                    calendar.problems.append('%s handled %d of %d leases'
                                             % (sweep, done, batch))
            lease_rows.purge([p.id for p in due])
    smallest = calendars[0].size
    rows = []
    for (size, sweep), measured in sorted(per_lease.items(),
                                          key=lambda item: item[0][::-1]):
        base = statistics.mean(per_lease[smallest, sweep])
        rows.append(dict(
            backend=backend, case=sweep_case(sweep, batch, size), live=size,
            sweep=sweep, per_lease=statistics.mean(measured),
            base=sweep_case(sweep, batch, smallest), base_per_lease=base,
            ratio=statistics.mean(measured) / base,
            queries=_counted(sent[size, sweep])))
    return rows


# -- the report --------------------------------------------------------------

def _verdict(met):
    return 'met' if met else 'NOT met'


def summary(rows):
    """The calendar's targets, each backend's figures beside their
    reference, met or NOT met."""
    rows = [row for row in rows if 'live' in row]
    if not rows:
        return []
    largest = max(row['live'] for row in rows)
    lines = ['target: a create at %s live leases within %.1fx of one at %s '
             '(p50)' % (_n(largest), FLAT, _n(min(r['live'] for r in rows)))]
    lines += ['  %s: %.2f ms vs %.2f ms: %.2fx, %s' % (
        row['backend'], row['p50'], row['base_p50'], row['ratio'],
        _verdict(row['ratio'] <= FLAT and not row['failed']))
        for row in rows if row.get('reservations') == 1
        and row['live'] == largest]
    many = [row for row in rows if row.get('reservations') == MANY]
    lines += ['target: a create of %d reservations within %.1fx of one of 1 '
              '(p50, %s live leases)' % (MANY, SIXTEEN, _n(many[0]['live']))
              ] if many else []
    lines += ['  %s: %.2f ms vs %.2f ms: %.2fx, %s' % (
        row['backend'], row['p50'], row['base_p50'], row['ratio'],
        _verdict(row['ratio'] <= SIXTEEN and not row['failed']))
        for row in many]
    for sweep in SWEEPS:
        lines.append('target: %s per lease at %s live leases within %.1fx of '
                     'at %s' % (sweep, _n(largest), FLAT, _n(min(
                         r['live'] for r in rows))))
        lines += ['  %s: %.2f ms vs %.2f ms per lease: %.2fx, %s' % (
            row['backend'], row['per_lease'], row['base_per_lease'],
            row['ratio'], _verdict(row['ratio'] <= FLAT and not row['failed']))
            for row in rows if row.get('sweep') == sweep
            and row['live'] == largest]
    lines.append('target: as many statements per create with %d reservations '
                 'as with 1, at every size' % MANY)
    for backend in dict.fromkeys(row['backend'] for row in rows):
        creates = [row for row in rows
                   if row['backend'] == backend and 'reservations' in row]
        counts = {row['queries'] for row in creates}
        figures = '; '.join('%s with %d at %s live' % (
            row['queries'], row['reservations'], _n(row['live']))
            for row in creates)
        lines.append('  %s: %s: %s' % (backend, figures, _verdict(
            len(counts) == 1 and isinstance(counts.pop(), int))))
    return lines


def plot(rows, ax):
    """Create p50 against live leases, one line per backend (and the
    create of 16 reservations as a cross), on axes of its own to the
    right of ``ax``."""
    rows = [row for row in rows if 'reservations' in row]
    if not rows:
        return
    curve = report.side_axes(ax, '60%')
    for backend in dict.fromkeys(row['backend'] for row in rows):
        ones = sorted((row['live'], row['p50']) for row in rows
                      if row['backend'] == backend
                      and row['reservations'] == 1)
        line, = curve.plot(*zip(*ones), marker='o', label=backend)
        curve.plot([row['live'] for row in rows if row['backend'] == backend
                    and row['reservations'] == MANY],
                   [row['p50'] for row in rows if row['backend'] == backend
                    and row['reservations'] == MANY], marker='x',
                   linestyle='', color=line.get_color(),
                   label='%s, %d reservations' % (backend, MANY))
    report.sizes_axis(curve, [row['live'] for row in rows], 'live leases',
                      'LEASES.create p50, ms')
