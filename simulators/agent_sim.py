"""agent-sim: a reference accelerator agent, simulated, over RPC.

    python simulators/agent_sim.py [--config-file F] [--iterations N]
        [--projects P] [--workers W] [--attach-failure-rate R]
        [--crash-rate R] [--detach-rate R] [--expire S] ...

Each iteration attaches a device the way an agent does: reserve, attach,
then commit (or roll back when the attach fails); and sometimes first
detaches an earlier device (release). A simulated agent crash leaves its
reservation to expire. Calls that are safe to repeat (reserve with its
request id, commit, rollback) are sent again when no answer comes; a
release without an answer is counted as unconfirmed, not repeated. At the
end the agent reports what it still holds (``report_allocations``) and
prints a summary table.

With the embedded in-process transport (``fake://``) the simulator runs its
own conductor on the configured database, so it works without a broker.
"""

import collections
import dataclasses
import json
import random
import sys
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging
import prettytable

from cyquota.conductor import rpc
from cyquota.conductor import rpcapi
from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota import exception
from cyquota import service

LOG = logging.getLogger(__name__)

PROG = 'agent-sim'

cli_opts = [
    cfg.IntOpt('iterations', default=200, min=1,
               help='Devices to attach, over all workers.'),
    cfg.IntOpt('projects', default=3, min=1,
               help='Projects to spread the attachments over.'),
    cfg.StrOpt('project-prefix', default='sim-project-',
               help='Project ids are this prefix and a number.'),
    cfg.IntOpt('workers', default=4, min=1,
               help='Concurrent simulated attach flows.'),
    cfg.StrOpt('resource', default='FPGA', help='Resource class to use.'),
    cfg.IntOpt('max-amount', default=2, min=1,
               help='Each attachment takes 1 to this many devices.'),
    cfg.FloatOpt('attach-failure-rate', min=0, max=1, default=0.1,
                 help='Share of attaches that fail (then rolled back).'),
    cfg.FloatOpt('crash-rate', min=0, max=1, default=0.05,
                 help='Share of attaches during which the agent "crashes" '
                      '(its reservation is left to expire).'),
    cfg.FloatOpt('detach-rate', min=0, max=1, default=0.5,
                 help='Chance that an iteration first detaches (releases) '
                      'one of its earlier devices.'),
    cfg.IntOpt('expire', default=60, min=1,
               help='Seconds until each reservation expires.'),
    cfg.IntOpt('timeout', default=10, min=1,
               help='Seconds to wait for each answer of the conductor.'),
    cfg.IntOpt('retry-for', default=120, min=0,
               help='Seconds to keep repeating a call that is safe to '
                    'repeat when no answer comes.'),
    cfg.BoolOpt('release-at-end', default=True,
                help='Detach every device still held when done.'),
    cfg.StrOpt('agent-host', default='agent-sim',
               help='Host name the agent sends its calls from (the request '
                    "context's host) and reports its allocations as."),
    cfg.IntOpt('seed', help='Random seed, for a repeatable run.'),
    cfg.StrOpt('summary-json',
               help='Also write the summary to this file as JSON.'),
]

COUNTERS = ('reserved', 'over_quota', 'attach_failed', 'crashed',
            'committed', 'expired_before_commit', 'released',
            'release_unconfirmed', 'errors')

_HEADERS = ('Project', 'Reserved', 'Over quota', 'Attach failed',
            'Crashed', 'Committed', 'Expired first', 'Released',
            'Release unconfirmed', 'Errors', 'Held')


@dataclasses.dataclass
class Attachment:
    project_id: str
    consumer_id: str
    amount: int


class AgentSimulator:
    """Drive the conductor as agents do and count what happened.

    :param api: a ``ConductorAPI``.
    :param options: the simulator's settings (as ``cli_opts`` name them,
                    with ``_`` for ``-``).
    """

    def __init__(self, api, options, progress=None):
        self.api = api
        self.options = options
        self.projects = ['%s%d' % (options.project_prefix, n)
                         for n in range(options.projects)]
        self.counts = {p: collections.Counter() for p in self.projects}
        self.unconfirmed_amount = collections.Counter()
        self.retries = 0
        self.reserve_seconds = []
        self.held = {}
        #: Whether any call got an answer (a result or an error).
        self.answered = False
        #: Seconds a call waited in vain before any call was answered:
        #: no conductor serves the topic, and the run stops early.
        self.unanswered_for = None
        self._progress = progress
        self._lock = threading.Lock()
        self._done = 0

    def _context(self):
        # What the conductor checks: the service role, and the host that
        # the agent's report is about.
        return cyquota_context.RequestContext(
            user_id='agent-sim', roles=['service'],
            host=self.options.agent_host)

    def _count(self, project_id, what, n=1):
        with self._lock:
            self.counts[project_id][what] += n

    def _repeatable(self, call, *args, **kwargs):
        """Make a call that is safe to repeat, again while no answer comes
        (the conductor may be restarting), for ``retry_for`` seconds."""
        started = time.monotonic()
        deadline = started + self.options.retry_for
        while True:
            try:
                result = call(self._context(), *args, **kwargs)
            except oslo_messaging.MessagingTimeout:
                now = time.monotonic()
                with self._lock:
                    if now < deadline:
                        self.retries += 1
                        continue
                    if not self.answered and self.unanswered_for is None:
                        self.unanswered_for = now - started
                raise
            except Exception:
                self.answered = True
                raise
            self.answered = True
            return result

    def detach(self, attachment):
        """Detach a device and release it. A release that gets no answer
        is not repeated (a release is not idempotent), and one that fails
        is not applied: either way the device is gone from the host while
        the books may still count it, which is counted as unconfirmed (the
        agent's report lets ``cyquota-manage quota check`` find it)."""
        project = attachment.project_id
        deltas = {self.options.resource: attachment.amount}
        try:
            self.api.release(self._context(), project, deltas,
                             consumer_id=attachment.consumer_id)
        except Exception as error:
            if not isinstance(error, oslo_messaging.MessagingTimeout):
                LOG.warning('Release for %s failed: %s', project,
                            getattr(error, 'message', error))
            self._count(project, 'release_unconfirmed')
            with self._lock:
                self.unconfirmed_amount[project] += attachment.amount
            return
        self._count(project, 'released')

    def attach(self, rng, project, consumer_id):
        """One attach flow; returns the Attachment when the device is held."""
        amount = rng.randint(1, self.options.max_amount)
        deltas = {self.options.resource: amount}
        started = time.monotonic()
        try:
            uuids = self._repeatable(
                self.api.reserve, project, deltas,
                expire=self.options.expire,
                request_id='req-%s' % consumer_id, consumer_id=consumer_id)
        except exception.OverQuota:
            self._count(project, 'over_quota')
            return None
        with self._lock:
            self.reserve_seconds.append(time.monotonic() - started)
        self._count(project, 'reserved')
        if rng.random() < self.options.crash_rate:
            self._count(project, 'crashed')
            return None
        if rng.random() < self.options.attach_failure_rate:
            self._repeatable(self.api.rollback, project, uuids)
            self._count(project, 'attach_failed')
            return None
        try:
            self._repeatable(self.api.commit, project, uuids)
        except exception.ReservationConflict:
            # It expired while the conductor was away: undo the attach.
            self._count(project, 'expired_before_commit')
            return None
        self._count(project, 'committed')
        return Attachment(project, consumer_id, amount)

    def _worker(self, worker, iterations):
        rng = random.Random(None if self.options.seed is None
                            else self.options.seed * 1000 + worker)
        held = []
        for i in range(iterations):
            if self.unanswered_for is not None:
                break
            project = rng.choice(self.projects)
            try:
                if held and rng.random() < self.options.detach_rate:
                    self.detach(held.pop(rng.randrange(len(held))))
                attachment = self.attach(
                    rng, project, '%s-w%d-%d' % (self.options.agent_host,
                                                 worker, i))
                if attachment is not None:
                    held.append(attachment)
            except Exception as error:
                # A real agent logs the failed attach and carries on.
                LOG.warning('Attach flow of %s failed: %s', project,
                            getattr(error, 'message', error))
                self._count(project, 'errors')
            self._tick()
        if self.options.release_at_end:
            while held:
                self.detach(held.pop())
        with self._lock:
            self.held.update((a.consumer_id, a) for a in held)

    def _tick(self):
        with self._lock:
            self._done += 1
            done = self._done
        if self._progress is not None:
            self._progress(done)

    def run(self):
        """Run every iteration, report the holdings; returns the summary."""
        started = time.monotonic()
        workers = self.options.workers
        share = [self.options.iterations // workers
                 + (1 if n < self.options.iterations % workers else 0)
                 for n in range(workers)]
        threads = [threading.Thread(target=self._worker, args=(n, share[n]))
                   for n in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        if self.unanswered_for is None:
            try:
                self._repeatable(self.api.report_allocations,
                                 self.options.agent_host, self.allocations())
            except oslo_messaging.MessagingTimeout:
                LOG.warning('No conductor answered the report of the '
                            'allocations held')
        return self.summary(elapsed)

    def allocations(self):
        """What the agent holds, as ``report_allocations`` takes it."""
        return [{'project_id': a.project_id,
                 'resource': self.options.resource,
                 'consumer_id': a.consumer_id, 'amount': a.amount}
                for a in self.held.values()]

    def summary(self, elapsed):
        held = collections.Counter()
        for attachment in self.held.values():
            held[attachment.project_id] += attachment.amount
        latencies = sorted(self.reserve_seconds)
        return {
            'iterations': self.options.iterations,
            'seconds': round(elapsed, 3),
            'iterations_per_second': round(
                self.options.iterations / max(elapsed, 1e-9), 1),
            'retries': self.retries,
            'reserve_ms_p50': _percentile_ms(latencies, 0.50),
            'reserve_ms_p99': _percentile_ms(latencies, 0.99),
            'resource': self.options.resource,
            'projects': {
                p: dict({c: self.counts[p][c] for c in COUNTERS},
                        held=held[p],
                        release_unconfirmed_amount=self.unconfirmed_amount[p])
                for p in self.projects},
        }


def _percentile_ms(sorted_seconds, fraction):
    if not sorted_seconds:
        return None
    index = min(len(sorted_seconds) - 1,
                int(round(fraction * (len(sorted_seconds) - 1))))
    return round(sorted_seconds[index] * 1000, 2)


def format_summary(summary):
    """The summary as a table and a few lines of totals."""
    table = prettytable.PrettyTable(_HEADERS)
    table.align = 'r'
    table.align['Project'] = 'l'
    totals = collections.Counter()
    for project, counts in summary['projects'].items():
        totals.update(counts)
        table.add_row([project] + [counts[c] for c in COUNTERS]
                      + [counts['held']])
    table.add_row(['total'] + [totals[c] for c in COUNTERS]
                  + [totals['held']])
    return '\n'.join([
        table.get_string(),
        '%(iterations)d iterations in %(seconds).1f s '
        '(%(iterations_per_second).1f/s); calls repeated after a timeout: '
        '%(retries)d' % summary,
        'reserve round trip: p50 %s ms, p99 %s ms' % (
            summary['reserve_ms_p50'], summary['reserve_ms_p99'])])


def _progress_printer(total):
    state = {'last': 0.0, 'started': time.monotonic()}
    lock = threading.Lock()

    def show(done):
        now = time.monotonic()
        with lock:
            if done < total and now - state['last'] < 1.0:
                return
            state['last'] = now
        # One write, so that a log line cannot land inside it.
        sys.stderr.write('progress: %d/%d iterations (%d%%), %.1f/s\n' % (
            done, total, 100 * done // total,
            done / max(now - state['started'], 1e-9)))
    return show


def main(argv=None):
    """Run the simulator; returns the exit code."""
    CONF.register_cli_opts(cli_opts)
    service.prepare_service(
        argv, cli=True, prog=PROG,
        description='Drive the conductor over RPC as accelerator agents do '
                    'and print what happened.')
    options = CONF
    conductor = None
    if rpc.is_in_process():
        # Nothing outside this process can answer: serve it here.
        service.check_database(migrate_sqlite=True)
        conductor = conductor_service.ConductorService(
            host='%s-conductor' % options.agent_host)
        conductor.start()
    try:
        simulator = AgentSimulator(
            rpcapi.ConductorAPI(timeout=options.timeout), options,
            progress=_progress_printer(options.iterations))
        summary = simulator.run()
    finally:
        if conductor is not None:
            conductor.stop()
            conductor.wait()
        rpc.reset()
    print(format_summary(summary))
    if options.summary_json:
        with open(options.summary_json, 'w') as out:
            json.dump(summary, out, indent=2, sort_keys=True)
    if simulator.unanswered_for is not None:
        service.fail('no conductor answered on topic %s within %d s' % (
            CONF.conductor.topic, round(simulator.unanswered_for)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
