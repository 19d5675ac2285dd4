"""cyquota-api: serve the REST API with waitress.

    cyquota-api [--config-file F] [--host H] [--port P] [--workers N]

Listens on ``[api] host``:``[api] port`` (default 127.0.0.1:6780;
``--host`` and ``--port`` override them) with ``[api] threads`` worker
threads, at most ``[api] connection_limit`` connections, each closed after
``[api] idle_timeout`` seconds idle, until SIGTERM or SIGINT, then stops
accepting connections and lets the requests in progress finish. With
``--workers N`` (or ``[api] workers``) above 1, a parent process binds the
socket and cotyledon keeps N forked children serving it, restarting one
that dies; SIGTERM to the parent stops them all. The workers keep their
metrics in one directory (``PROMETHEUS_MULTIPROC_DIR`` if set, else a
temporary one) so that a scrape sums them, and ``[metrics] listen`` is
served by one more child. The database schema must be current
(``cyquota-manage db sync``), and ``[api] auth_strategy = noauth`` serves
on a loopback address only (``cyquota.api.noauth``). For uWSGI or another
WSGI server use ``cyquota.api.wsgi:application``.
"""

import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile

import cotyledon
from oslo_config import cfg
from oslo_log import log as logging

from cyquota.api import app
from cyquota.api import bodylimit
from cyquota.api import healthcheck
from cyquota.api import metrics_listener
from cyquota.api import noauth
from cyquota.conf import api as api_conf
from cyquota.conf import CONF
from cyquota import metrics
from cyquota import service

LOG = logging.getLogger(__name__)

PROG = 'cyquota-api'

#: Seconds a worker is given, after SIGTERM, to finish its requests.
SHUTDOWN_TIMEOUT = 30

_WORKERS = cfg.IntOpt(
    'workers', min=1,
    help='Processes serving the API (default [api] workers).')


def stop(signum, frame):
    """The SIGTERM and SIGINT handler of the services that serve the API."""
    LOG.info('Signal %d received, stopping', signum)
    # waitress's loop closes the server on SystemExit.
    raise SystemExit(0)


def check_start_up():
    """Refuse noauth where others may reach it; warn of what callers
    without a token may read. Before anything is started."""
    noauth.check(CONF.api.host)
    healthcheck.warn_if_detailed()
    metrics_listener.warn_if_exposed()


def _server(**listen):
    server = bodylimit.create_server(
        app.setup_app(), threads=CONF.api.threads, ident='cyquota',
        clear_untrusted_proxy_headers=True,
        connection_limit=CONF.api.connection_limit,
        channel_timeout=CONF.api.idle_timeout,
        # waitress looks for idle connections every cleanup_interval
        # seconds (30 by default): once a second, an idle one is closed
        # within a second of idle_timeout.
        cleanup_interval=1,
        # select() cannot watch more than 1024 descriptors; poll() can.
        asyncore_use_poll=True, **listen)
    service.freeze_start_up()
    return server


def serve():
    """Serve the app on ``[api] host``:``[api] port`` in this process until
    SIGTERM or SIGINT (the caller has prepared the service)."""
    try:
        server = _server(host=CONF.api.host, port=CONF.api.port)
    except OSError as error:
        _cannot_listen(error)
    metrics_listener.start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    LOG.info('cyquota-api serving on http://%s:%s (auth_strategy %s, %d '
             'threads)', CONF.api.host, server.effective_port,
             CONF.api.auth_strategy, CONF.api.threads)
    server.run()


class ApiWorker(cotyledon.Service):
    """One forked process serving the app on the parent's socket.

    Everything with threads or connections (waitress's task threads, the
    database engine, created on first use) is made here, after the fork.
    """

    name = PROG

    def __init__(self, worker_id, listener):
        super().__init__(worker_id)
        self._server = _server(sockets=[listener])

    def run(self):
        self._server.run()

    def terminate(self):
        # Let the requests in progress finish; the process then exits.
        self._server.task_dispatcher.shutdown(timeout=SHUTDOWN_TIMEOUT)


class MetricsListener(cotyledon.Service):
    """The ``[metrics] listen`` listener (its socket bound by the parent),
    served from a child of its own: it sums the workers' counts."""

    name = PROG + ': metrics listener'

    def __init__(self, worker_id, listening):
        super().__init__(worker_id)
        self._server = metrics_listener.make_server(listening)

    def run(self):
        self._server.run()

    def terminate(self):
        self._server.task_dispatcher.shutdown(timeout=SHUTDOWN_TIMEOUT)


def _listener():
    """The listening socket every worker accepts on."""
    try:
        family, _, _, _, address = socket.getaddrinfo(
            CONF.api.host, CONF.api.port, type=socket.SOCK_STREAM)[0]
        return socket.create_server(address, family=family)
    except OSError as error:
        _cannot_listen(error)


def _cannot_listen(error):
    service.fail('cannot listen on %s:%s: %s' % (
        CONF.api.host, CONF.api.port, error.strerror or error))


def serve_workers(workers):
    """Serve the app from ``workers`` forked processes on one socket until
    SIGTERM (graceful) or SIGINT (immediate) to this, the parent."""
    listener = _listener()
    shared = os.environ.get('PROMETHEUS_MULTIPROC_DIR')
    made = None if shared else tempfile.mkdtemp(prefix='cyquota-metrics-')
    metrics.share_between_processes(shared or made)
    manager = cotyledon.ServiceManager(
        graceful_shutdown_timeout=SHUTDOWN_TIMEOUT + 5,
        mp_context=multiprocessing.get_context('fork'))
    manager.add(ApiWorker, workers=workers, args=(listener,))
    if CONF.metrics.listen:
        manager.add(MetricsListener,
                    args=(metrics_listener.listening(),))
    LOG.info('cyquota-api serving on http://%s:%s (auth_strategy %s, %d '
             'workers of %d threads)', CONF.api.host,
             listener.getsockname()[1], CONF.api.auth_strategy, workers,
             CONF.api.threads)
    try:
        manager.run()
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)


def run():
    """Serve with ``--workers``, else ``[api] workers`` processes."""
    workers = CONF.workers or CONF.api.workers
    if workers == 1:
        serve()
    else:
        serve_workers(workers)


def main(argv=None):
    """Entry point of ``cyquota-api``."""
    CONF.register_cli_opt(_WORKERS)
    api_conf.register_cli_opts(CONF)
    service.prepare_service(argv, prog=PROG,
                            description='Serve the cyquota REST API.')
    api_conf.apply_cli_opts(CONF)
    check_start_up()
    service.check_database()
    run()
    return 0


if __name__ == '__main__':
    sys.exit(main())
