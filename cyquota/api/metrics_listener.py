"""The ``[metrics] listen`` listener: ``GET /metrics`` for a Prometheus
scraper, without authentication, on an address of its own (meant for a
management network), beside the API port where ``/metrics`` needs policy
``cyquota:metrics:get``.

cyquota-api and cyquota-all-in-one serve it themselves (:func:`start`;
cyquota-api with several workers from a process of its own, summing the
workers' counts). Under uWSGI, run it as its own process on the host, with
the workers' ``PROMETHEUS_MULTIPROC_DIR``::

    PROMETHEUS_MULTIPROC_DIR=/run/cyquota/metrics python -m \\
        cyquota.api.metrics_listener --config-file /etc/cyquota/cyquota.conf
"""

import signal
import socket
import socketserver
import sys
import threading
from wsgiref import simple_server

from oslo_log import log as logging
import webob.dec
import webob.exc

from cyquota.api import errors
from cyquota.api import metrics_page
from cyquota.conf import CONF
from cyquota.conf import metrics as metrics_conf
from cyquota import service

LOG = logging.getLogger(__name__)

PROG = 'cyquota-metrics-listener'


@webob.dec.wsgify
def application(request):
    """``GET /metrics``; anything else 404 or 405, in the API's error
    document."""
    if request.path_info != '/metrics':
        return errors.response_for(webob.exc.HTTPNotFound(), request.environ)
    if request.method not in ('GET', 'HEAD'):
        return errors.response_for(webob.exc.HTTPMethodNotAllowed(),
                                   request.environ)
    return metrics_page.response(request.environ)


class _Handler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        # Every scrape would be an INFO line otherwise.
        LOG.debug('Metrics listener: ' + format, *args)


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


def make_server(listen):
    """A server bound to ``listen`` (``HOST:PORT``), not yet serving.

    :raises OSError: when the address cannot be bound.
    """
    host, port = metrics_conf.split(listen)
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    server_class = type('Server', (_Server,), {'address_family': family})
    return simple_server.make_server(host, port, application,
                                     server_class=server_class,
                                     handler_class=_Handler)


def serve_in_thread(server):
    """Serve ``server`` from a daemon thread; return the thread."""
    thread = threading.Thread(target=server.serve_forever,
                              name='metrics-listener', daemon=True)
    thread.start()
    LOG.info('Metrics listener serving on http://%s/metrics',
             CONF.metrics.listen)
    return thread


def start():
    """Serve ``[metrics] listen`` from a thread of this process, if set;
    stops the process with one line when it cannot listen."""
    if CONF.metrics.listen:
        serve_in_thread(listening())


def listening():
    """A server bound to ``[metrics] listen``, or the process stopped with
    one line."""
    try:
        return make_server(CONF.metrics.listen)
    except OSError as error:
        service.fail('[metrics] listen: cannot listen on %s: %s' % (
            CONF.metrics.listen, error.strerror or error))


def _stop(signum, frame):
    raise SystemExit(0)


def main(argv=None):
    """Serve ``[metrics] listen`` until SIGTERM or SIGINT (for hosts whose
    API runs under uWSGI)."""
    service.prepare_service(argv, prog=PROG,
                            description='Serve [metrics] listen.')
    if not CONF.metrics.listen:
        service.fail('[metrics] listen is not set')
    server = listening()
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    LOG.info('Metrics listener serving on http://%s/metrics',
             CONF.metrics.listen)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
