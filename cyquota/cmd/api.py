"""cyquota-api: serve the REST API with waitress.

    cyquota-api [--config-file F]

Listens on ``[api] host``:``[api] port`` (default 127.0.0.1:6780) with
``[api] threads`` worker threads until SIGTERM or SIGINT, then stops
accepting connections and lets the requests in progress finish. The
database schema must be current (``cyquota-manage db sync``). For uWSGI or
another WSGI server use ``cyquota.api.wsgi:application``.
"""

import signal
import sys

from oslo_log import log as logging
import waitress

from cyquota.api import app
from cyquota.conf import CONF
from cyquota import enforcement
from cyquota import service

LOG = logging.getLogger(__name__)

PROG = 'cyquota-api'


def _stop(signum, frame):
    LOG.info('Signal %d received, stopping', signum)
    # waitress's loop closes the server on SystemExit.
    raise SystemExit(0)


def serve():
    """Serve the app on ``[api] host``:``[api] port`` until SIGTERM or
    SIGINT (the caller has prepared the service)."""
    server = waitress.create_server(
        app.setup_app(), host=CONF.api.host, port=CONF.api.port,
        threads=CONF.api.threads, ident='cyquota',
        clear_untrusted_proxy_headers=True)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    LOG.info('cyquota-api serving on http://%s:%s (auth_strategy %s, %d '
             'threads)', CONF.api.host, server.effective_port,
             CONF.api.auth_strategy, CONF.api.threads)
    server.run()


def main(argv=None):
    """Entry point of ``cyquota-api``."""
    service.prepare_service(argv)
    try:
        enforcement.check_config()
    except enforcement.ConfigError as error:
        sys.exit('%s: %s' % (PROG, error))
    serve()
    return 0


if __name__ == '__main__':
    sys.exit(main())
