"""A conductor in a process: the RPC server and the periodic tasks.

The periodic tasks roll back expired reservations (``[conductor]
expire_interval``, first run at start, so a restarted conductor catches up
at once), start and end leases at their dates (``[conductor]
lease_interval``, with ``[placement] write_leases`` also writing back to
the cloud's Placement what was not written yet:
``cyquota.cloud.lease_writeback``), purge old finished rows (``[conductor]
purge_interval``) and, with ``[placement] source = placement``, copy the
cloud's Placement into cyquota (``[placement] sync_interval``, one
conductor per round: ``cyquota.cloud.mirror``) and compare the ledger
with it (``[placement] witness_interval``, one conductor per round:
``cyquota.cloud.witness_rounds``); they roll budgets over to a new
period and tell the budgets found spent (``[budgets] rollover_interval``,
first run at start: ``cyquota.budgets.rollover``, ``.exhaustion``). Any
number of conductors may run them against one database: the ledger locks
each reservation's and each lease's row, so each is expired, started or
ended exactly once, a compare-and-set moves each budget to a new period
once, and a small jitter keeps the conductors from running in step.
"""

import threading
import time

from futurist import periodics
from oslo_log import log as logging

from cyquota.budgets import exhaustion
from cyquota.budgets import rollover
from cyquota.cloud import lease_writeback
from cyquota.cloud import mirror
from cyquota.cloud import witness_rounds
from cyquota.conductor import cyborg_binds
from cyquota.conductor import manager
from cyquota.conductor import rpc
from cyquota.conf import CONF
from cyquota.conf import cyborg as cyborg_conf
from cyquota import context as cyquota_context
from cyquota import leases
from cyquota import quota
from cyquota import redaction

LOG = logging.getLogger(__name__)

#: Seconds a stopping conductor waits for the requests and the periodic
#: run in progress (a ledger transaction takes milliseconds); a broker that
#: went away meanwhile does not hold it longer.
STOP_TIMEOUT = 5


class StartError(Exception):
    """The conductor cannot serve on the message bus; the message is one
    line, its URL's password masked."""


def _witness_task(host):
    """The periodic witness, every ``[placement] witness_interval``."""

    @periodics.periodic(CONF.placement.witness_interval)
    def check_placement_witness():
        witness_rounds.periodic_check(cyquota_context.get_admin_context(),
                                      host)

    return check_placement_witness


def _periodic_tasks(host):
    """The periodic callables, spaced as configured now; ``host`` names
    the conductor that claims a round of the Placement mirror's sync."""

    @periodics.periodic(CONF.conductor.expire_interval, run_immediately=True)
    def expire_reservations():
        quota.QUOTAS.expire(cyquota_context.get_admin_context())

    @periodics.periodic(CONF.conductor.lease_interval, run_immediately=True)
    def start_and_end_leases():
        context = cyquota_context.get_admin_context()
        leases.LEASES.start_due(context)
        leases.LEASES.end_due(context)
        lease_writeback.apply_outstanding(context)

    @periodics.periodic(CONF.conductor.purge_interval)
    def purge_reservations():
        purged = quota.QUOTAS.purge(cyquota_context.get_admin_context())
        if purged:
            LOG.info('Purged %d row(s) past their retention (finished '
                     'reservations, resolved drift, refusals)', purged)

    @periodics.periodic(CONF.budgets.rollover_interval, run_immediately=True)
    def roll_budgets_over():
        context = cyquota_context.get_admin_context()
        rollover.roll_all(context)
        exhaustion.tell(context)

    @periodics.periodic(CONF.placement.sync_interval, run_immediately=True)
    def sync_placement_mirror():
        mirror.periodic_sync(cyquota_context.get_admin_context(), host)

    tasks = [(expire_reservations, None, None),
             (start_and_end_leases, None, None),
             (purge_reservations, None, None),
             (roll_budgets_over, None, None)]
    if CONF.placement.source == 'placement':
        tasks.append((sync_placement_mirror, None, None))
        if CONF.placement.witness_interval:  # 0: no periodic witness
            tasks.append((_witness_task(host), None, None))
    if cyborg_conf.configured(CONF):
        reader = cyborg_binds.load_reader(CONF)

        @periodics.periodic(CONF.cyborg.bind_check_interval,
                            run_immediately=True)
        def resolve_cyborg_binds():
            cyborg_binds.resolve(cyquota_context.get_admin_context(), reader)

        tasks.append((resolve_cyborg_binds, None, None))
    return tasks


class ConductorService:
    """Serve the conductor RPC API and run the periodic tasks in threads.

    :param host: the server's name on the bus (``[conductor] host``).
    """

    def __init__(self, host=None):
        self.host = host or CONF.conductor.host
        self._server = rpc.get_server([manager.ConductorManager()], self.host)
        # A failed run (the database away, say) is logged by the worker and
        # tried again at the next interval.
        self._periodic = periodics.PeriodicWorker(
            _periodic_tasks(self.host),
            schedule_strategy='last_finished_jitter')
        self._periodic_thread = threading.Thread(
            target=self._periodic.start, name='cyquota-conductor-periodic',
            daemon=True)

    def start(self):
        """Serve on the bus and start the periodic tasks.

        While the broker cannot be reached this retries, as oslo.messaging
        does, until it can (or a signal stops the process).

        :raises StartError: when the broker refuses the conductor (a wrong
            password, say).
        """
        try:
            self._server.start()
        except Exception as error:  # noqa: B902 (any driver's own error)
            raise StartError('cannot serve on the message bus %s: %s' % (
                redaction.mask_url(CONF.transport_url),
                redaction.mask_url(str(error).strip().splitlines()[0])))
        self._periodic_thread.start()
        LOG.info('Conductor %s serving topic %s', self.host,
                 CONF.conductor.topic)

    def stop(self):
        """Stop taking requests and starting periodic runs."""
        self._periodic.stop()
        self._server.stop()

    def wait(self, timeout=None):
        """Wait for the requests and the periodic run in progress, at most
        ``timeout`` seconds (None: as long as they take); returns whether
        they finished."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._periodic_thread.join(timeout)
        # The server's wait also closes its broker connection, which
        # reconnects first if the broker went away: a daemon thread that
        # the process need not wait for.
        waiting = threading.Thread(target=self._server.wait, daemon=True,
                                   name='cyquota-conductor-stop')
        waiting.start()
        waiting.join(None if deadline is None
                     else max(0, deadline - time.monotonic()))
        finished = not (waiting.is_alive()
                        or self._periodic_thread.is_alive())
        if not finished:
            LOG.warning('Stopped without waiting longer than %s s for the '
                        'requests in progress', timeout)
        return finished
