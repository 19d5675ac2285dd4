"""cyquota-conductor: serve the agents' quota calls and expire reservations.

    cyquota-conductor [--config-file F]

Runs until SIGTERM or SIGINT, then stops taking requests and finishes the
ones in progress. Run as many as needed against one database and broker.
"""

import signal
import sys
import threading

from oslo_log import log as logging

from cyquota.conductor import rpc
from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota import service

LOG = logging.getLogger(__name__)

PROG = 'cyquota-conductor'


def main(argv=None):
    """Entry point of ``cyquota-conductor``."""
    service.prepare_service(
        argv, prog=PROG, description="Serve the agents' quota calls over "
                                     'RPC and expire reservations.')
    service.check_database()
    stopping = threading.Event()
    serving = threading.Event()

    def stop(signum, frame):
        LOG.info('Signal %d received, stopping', signum)
        if not serving.is_set() or stopping.is_set():
            # Still connecting to the broker (which retries for as long as
            # it is away), or a second signal while stopping: nothing
            # waits to be finished, stop at once.
            raise SystemExit(0)
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        conductor = _started()
    except conductor_service.StartError as error:
        service.fail(error)
    serving.set()
    while not stopping.wait(1):
        pass
    conductor.stop()
    conductor.wait(conductor_service.STOP_TIMEOUT)
    return 0


def _started():
    """The conductor service, started, with what start-up made out of
    the full garbage collections (``service.freeze_start_up``)."""
    if rpc.is_in_process():
        LOG.warning('[DEFAULT] transport_url is the in-process %s: only '
                    'this process can reach this conductor (it still '
                    'expires reservations); set a rabbit:// URL for agents',
                    CONF.transport_url)
    conductor = conductor_service.ConductorService()
    conductor.start()
    service.freeze_start_up()
    return conductor


if __name__ == '__main__':
    sys.exit(main())
