"""A conductor in a process: the RPC server and the periodic tasks.

The periodic tasks roll back expired reservations (``[conductor]
expire_interval``, first run at start, so a restarted conductor catches up
at once), start and end leases at their dates (``[conductor]
lease_interval``) and purge old finished rows (``[conductor]
purge_interval``). Any number of conductors may run them against one
database: the ledger locks each reservation's and each lease's row, so
each is expired, started or ended exactly once, and a small jitter keeps
the conductors from running in step.
"""

import threading

from futurist import periodics
from oslo_log import log as logging

from cyquota.conductor import manager
from cyquota.conductor import rpc
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota import leases
from cyquota import quota

LOG = logging.getLogger(__name__)


def _periodic_tasks():
    """The periodic callables, spaced as configured now."""

    @periodics.periodic(CONF.conductor.expire_interval, run_immediately=True)
    def expire_reservations():
        quota.QUOTAS.expire(cyquota_context.get_admin_context())

    @periodics.periodic(CONF.conductor.lease_interval, run_immediately=True)
    def start_and_end_leases():
        context = cyquota_context.get_admin_context()
        leases.LEASES.start_due(context)
        leases.LEASES.end_due(context)

    @periodics.periodic(CONF.conductor.purge_interval)
    def purge_reservations():
        purged = quota.QUOTAS.purge(cyquota_context.get_admin_context())
        if purged:
            LOG.info('Purged %d finished reservation row(s)', purged)

    return [(expire_reservations, None, None),
            (start_and_end_leases, None, None),
            (purge_reservations, None, None)]


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
            _periodic_tasks(), schedule_strategy='last_finished_jitter')
        self._periodic_thread = threading.Thread(
            target=self._periodic.start, name='cyquota-conductor-periodic',
            daemon=True)

    def start(self):
        self._server.start()
        self._periodic_thread.start()
        LOG.info('Conductor %s serving topic %s', self.host,
                 CONF.conductor.topic)

    def stop(self):
        """Stop taking requests and starting periodic runs."""
        self._periodic.stop()
        self._server.stop()

    def wait(self):
        """Wait for the requests and the periodic run in progress."""
        self._periodic_thread.join()
        self._server.wait()
