"""The ``[metrics] listen`` listener: ``GET /metrics`` for a Prometheus
scraper, without authentication, on an address of its own (meant for a
management network), beside the API port where ``/metrics`` needs policy
``cyquota:metrics:get``.

It is served by waitress with a fixed number of threads, a connection
limit and an idle timeout (:data:`THREADS`, :data:`CONNECTION_LIMIT`,
:data:`IDLE_TIMEOUT`), and its page is rendered by one scrape at a time and
shared for ``[metrics] listen_cache_time`` seconds
(``metrics_page.SharedPage``): idle connections and parallel scrapers cost
neither a thread each nor a read of every usage row each.

cyquota-api and cyquota-all-in-one serve it themselves (:func:`start`;
cyquota-api with several workers from a process of its own, summing the
workers' counts). Under uWSGI, run it as its own process on the host, with
the workers' ``PROMETHEUS_MULTIPROC_DIR``::

    PROMETHEUS_MULTIPROC_DIR=/run/cyquota/metrics python -m \\
        cyquota.api.metrics_listener --config-file /etc/cyquota/cyquota.conf
"""

import signal
import socket
import sys
import threading

from oslo_log import log as logging
import waitress
import webob.dec
import webob.exc

from cyquota.api import errors
from cyquota.api import metrics_page
from cyquota.api import noauth
from cyquota.conf import CONF
from cyquota.conf import metrics as metrics_conf
from cyquota import service

LOG = logging.getLogger(__name__)

PROG = 'cyquota-metrics-listener'

#: Threads serving scrapes: pages are rendered one at a time anyway.
THREADS = 2
#: Connections open at once; more wait in the listening socket's backlog.
#: waitress counts its own two sockets (listening, wake-up) in the limit.
CONNECTION_LIMIT = 22
#: Seconds a connection may stay idle (nothing received, no scrape in
#: progress) before it is closed: a Prometheus scraper reconnects.
IDLE_TIMEOUT = 10

#: The listener's page, shared by every scrape of this process.
_PAGE = metrics_page.SharedPage()


@webob.dec.wsgify
def application(request):
    """``GET /metrics``; anything else 404 or 405, in the API's error
    document."""
    if request.path_info != '/metrics':
        return errors.response_for(webob.exc.HTTPNotFound(), request.environ)
    if request.method not in ('GET', 'HEAD'):
        return errors.response_for(webob.exc.HTTPMethodNotAllowed(),
                                   request.environ)
    return metrics_page.response(request.environ, _PAGE)


def bind(listen):
    """A listening socket bound to ``listen`` (``HOST:PORT``).

    :raises OSError: when the address cannot be bound.
    """
    host, port = metrics_conf.split(listen)
    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM)[0]
    return socket.create_server(address, family=family)


def make_server(listening):
    """The waitress server of the listener on the ``listening`` socket, not
    yet serving: its threads are started here, so make it in the process
    that serves."""
    return waitress.create_server(
        application, sockets=[listening], threads=THREADS,
        connection_limit=CONNECTION_LIMIT, channel_timeout=IDLE_TIMEOUT,
        # Look for idle connections every second, not every 30.
        cleanup_interval=1, ident='cyquota')


def serve_in_thread(listening):
    """Serve the ``listening`` socket from a daemon thread; return the
    server."""
    server = make_server(listening)
    threading.Thread(target=server.run, name='metrics-listener',
                     daemon=True).start()
    LOG.info('Metrics listener serving on http://%s/metrics',
             CONF.metrics.listen)
    return server


def start():
    """Serve ``[metrics] listen`` from a thread of this process, if set;
    stops the process with one line when it cannot listen."""
    if CONF.metrics.listen:
        serve_in_thread(listening())


def listening():
    """A socket bound to ``[metrics] listen``, or the process stopped with
    one line."""
    try:
        return bind(CONF.metrics.listen)
    except OSError as error:
        service.fail('[metrics] listen: cannot listen on %s: %s' % (
            CONF.metrics.listen, error.strerror or error))


def warn_if_exposed():
    """Log a WARNING when ``[metrics] listen`` is set to an address that is
    not loopback: it serves every project's usage without
    authentication."""
    if CONF.metrics.listen:
        host = metrics_conf.split(CONF.metrics.listen)[0]
        if not noauth.is_loopback(host):
            LOG.warning(
                '[metrics] listen = %s serves GET /metrics, every '
                'project\'s usage, without authentication to whoever '
                'reaches that address: keep it on a management network',
                CONF.metrics.listen)


def _stop(signum, frame):
    raise SystemExit(0)


def main(argv=None):
    """Serve ``[metrics] listen`` until SIGTERM or SIGINT (for hosts whose
    API runs under uWSGI)."""
    service.prepare_service(argv, prog=PROG,
                            description='Serve [metrics] listen.')
    if not CONF.metrics.listen:
        service.fail('[metrics] listen is not set')
    warn_if_exposed()
    server = make_server(listening())
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    LOG.info('Metrics listener serving on http://%s/metrics',
             CONF.metrics.listen)
    try:
        server.run()  # returns on SystemExit
    finally:
        server.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
