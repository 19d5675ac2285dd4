"""The hot paths of the ``placement`` benchmark, in Placement mode beside
local mode.

Each mode is a spawned process of its own, as each is a deployment of its
own: cyquota pointed at its database, ``[placement] source`` set, its
engine and caches warm. The benchmark process has them take turns call
kind by call kind (a few reserves in one, as many in the other, then
commits, ...), the one going first alternating, so that a busier moment
of the shared machine weighs on both modes alike.
"""

import contextlib
import datetime
import multiprocessing
import statistics
import time

from oslo_utils import uuidutils
import sqlalchemy as sa

import benchmarks
from benchmarks import placement_cloud
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import placement_models
from cyquota import leases
from cyquota import quota

LOCAL, PLACEMENT = 'local', 'placement'
RESERVE, COMMIT, CLAIM, LEASE = ('QUOTAS.reserve', 'QUOTAS.commit',
                                 'reserve claiming a device',
                                 'LEASES.create')
HOT_PATHS = (RESERVE, COMMIT, CLAIM, LEASE)
RESOURCE = 'FPGA'
#: Untimed calls of each hot path when a mode's process starts.
WARM_UP = 3
RESERVING, CLAIMING, LEASING = ('bench-reserving', 'bench-claiming',
                                'bench-leasing')


class HotPaths:
    """The timed calls, in the process of one mode. A reserve waits to be
    committed by a commit; a claim is rolled back and a lease ended,
    untimed, so that every call meets the same devices."""

    def __init__(self, aggregate):
        self.ctx = cyquota_context.get_admin_context()
        self.aggregate = aggregate
        self.pending = []
        self.committed = 0
        self.calls = {RESERVE: self._reserve, COMMIT: self._commit,
                      CLAIM: self._claim, LEASE: self._lease}

    def time(self, name, count):
        """Milliseconds of ``count`` calls of the hot path ``name``."""
        return [self.calls[name]() for _ in range(count)]

    def _reserve(self):
        started = time.perf_counter()
        self.pending.append(quota.QUOTAS.reserve(self.ctx, RESERVING,
                                                 {RESOURCE: 1}))
        return (time.perf_counter() - started) * 1000

    def _commit(self):
        uuids = self.pending.pop(0)
        started = time.perf_counter()
        quota.QUOTAS.commit(self.ctx, RESERVING, uuids)
        elapsed = (time.perf_counter() - started) * 1000
        self.committed += 1
        return elapsed

    def _claim(self):
        started = time.perf_counter()
        uuids = quota.QUOTAS.reserve(
            self.ctx, CLAIMING, {RESOURCE: 1},
            consumer_id=uuidutils.generate_uuid(),
            devices={'resources': '%s:1' % RESOURCE,
                     'member_of': self.aggregate})
        elapsed = (time.perf_counter() - started) * 1000
        quota.QUOTAS.rollback(self.ctx, CLAIMING, uuids)
        return elapsed

    def _lease(self):
        start = (datetime.datetime.now(datetime.timezone.utc)
                 + datetime.timedelta(days=1)).replace(microsecond=0)
        body = {'start_date': start.isoformat(),
                'end_date': (start + datetime.timedelta(hours=1)
                             ).isoformat(),
                'reservations': [{'resource_type': 'accelerator:' + RESOURCE,
                                  'amount': 1, 'member_of': [self.aggregate]}]}
        started = time.perf_counter()
        made = leases.LEASES.create(self.ctx, LEASING, body)
        elapsed = (time.perf_counter() - started) * 1000
        leases.LEASES.delete(self.ctx, made['id'])
        return elapsed

    def check(self, others):
        """What is wrong in this mode's database: every reserve committed,
        every claim rolled back (the devices hold only the ``others``
        rows of other consumers' usage), no live lease."""
        usage = {project: quota.QUOTAS.get_project_usage(
            self.ctx, project)[RESOURCE]
            for project in (RESERVING, CLAIMING, LEASING)}
        problems = []
        mine = usage[RESERVING]
        if (mine['used'], mine['reserved']) != (self.committed, 0):
            problems.append('%s used %d, reserved %d after %d commits' % (
                RESERVING, mine['used'], mine['reserved'], self.committed))
        for project in (CLAIMING, LEASING):
            counts = tuple(usage[project][key] for key in (
                'used', 'reserved', 'leased', 'promised'))
            if any(counts):
                problems.append('%s holds %s' % (project, counts))
        allocated = _count(placement_models.DeviceAllocation.__table__)
        if allocated != others:
            problems.append('%d device allocation rows, not %d'
                            % (allocated, others))
        table = lease_models.Lease.__table__
        if _count(table, table.c.status.in_(lease_models.LIVE)):
            problems.append('a live lease is left')
        return problems


def _count(table, *where):
    with db_api.get_engine().connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)
                            .where(*where)).scalar()


def _serve(conn, mode, url, aggregate):
    """The process of one mode: answers ``(method, *args)`` of
    :class:`HotPaths` with ``(True, result)`` or ``(False, error)``, until
    ``None``."""
    benchmarks.use_database(url)
    CONF.set_override('resources', placement_cloud.EXTRA_RESOURCES, 'quota')
    CONF.set_override('source', mode, 'placement')
    hot = HotPaths(aggregate)
    quota.QUOTAS.limits.set_registered_limit(hot.ctx, RESOURCE, 10 ** 9)
    for name in HOT_PATHS:
        hot.time(name, WARM_UP)
    conn.send((True, None))
    for command in iter(conn.recv, None):
        try:
            conn.send((True, getattr(hot, command[0])(*command[1:])))
        except Exception as error:  # told to the benchmark, which stops
            conn.send((False, '%s: %s' % (type(error).__name__, error)))


class Mode:
    """A spawned process of one mode on the database at ``url``."""

    def __init__(self, mode, url, aggregate):
        context = multiprocessing.get_context('spawn')
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, mode, url, aggregate), daemon=True)
        self.process.start()
        child.close()
        self.mode = mode

    def ready(self):
        """Wait until the process has warmed up."""
        self._answer()

    def _answer(self):
        ok, result = self.conn.recv()
        if not ok:
            raise RuntimeError('%s mode: %s' % (self.mode, result))
        return result

    def ask(self, method, *args):
        """``HotPaths.<method>(*args)`` in the process."""
        self.conn.send((method,) + args)
        return self._answer()

    def close(self):
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join(30)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()


def measure(backend, urls, aggregate, others, rounds, calls, progress):
    """Rows of the hot paths' p50 in both modes (``urls``: ``{mode:
    database url}``), each mode ``rounds`` times ``calls`` calls of each;
    ``others``: the device allocation rows of other consumers in
    Placement mode."""
    times = {mode: {name: [] for name in HOT_PATHS} for mode in urls}
    with contextlib.ExitStack() as stack:
        modes = {}
        for mode, url in urls.items():
            modes[mode] = Mode(mode, url, aggregate)
            stack.callback(modes[mode].close)
        for mode in modes.values():
            mode.ready()
        for turn in range(rounds):
            if turn % max(1, rounds // 5) == 0:
                progress.step('placement: %s: hot paths, round %d of %d'
                              % (backend, turn + 1, rounds))
            for number, name in enumerate(HOT_PATHS):
                order = (LOCAL, PLACEMENT) if (turn + number) % 2 else (
                    PLACEMENT, LOCAL)
                for mode in order:
                    times[mode][name] += modes[mode].ask('time', name, calls)
        problems = ['%s: %s' % (mode, problem) for mode in (LOCAL, PLACEMENT)
                    for problem in modes[mode].ask(
                        'check', others if mode == PLACEMENT else 0)]
    rows = []
    for name in HOT_PATHS:
        local, placement = (times[mode][name] for mode in (LOCAL, PLACEMENT))
        rows.append(dict(
            backend=backend, measurement=name, calls=len(local),
            local_p50=statistics.median(local),
            placement_p50=statistics.median(placement),
            ratio=statistics.median(placement) / statistics.median(local),
            check='; '.join(problems) or 'ok', failed=bool(problems)))
    return rows
