"""The WSGI entry point for a WSGI server such as uWSGI (devstack)::

    [uwsgi]
    module = cyquota.api.wsgi:application
    pyargv = --config-file /etc/cyquota/cyquota.conf

The server's ``pyargv`` (``sys.argv`` here) is parsed as cyquota's command
line; without ``--config-file`` oslo.config's default locations apply
(``/etc/cyquota/cyquota.conf`` and others). With several workers, give
them one ``PROMETHEUS_MULTIPROC_DIR`` (``env = PROMETHEUS_MULTIPROC_DIR=
/run/cyquota/metrics``) so that ``GET /metrics`` sums them, and serve
``[metrics] listen`` beside them with ``python -m cyquota.metrics.listener``
(``metrics_listener``) on the same directory (doc/source/metrics.rst). Set
``limit-post`` to ``[api] max_request_body_size`` and leave
``post-buffering`` off, so that a body past the limit is refused before it
is read.

The app cannot see the address the server listens on, so ``[api]
auth_strategy = noauth`` is refused here (the app fails to load, with one
line) unless ``[api] allow_remote_noauth = true`` says that whoever
reaches the server may be trusted; use ``keystone`` (as devstack does).
"""

import sys

from cyquota.api import app
from cyquota.api import healthcheck
from cyquota.api import noauth
from cyquota import service


def init_application(argv=None):
    """Parse the configuration, set up logging, check noauth's opt-in and
    the database (the server fails to load the app, with one line, without
    the opt-in or on a database that is missing or not migrated), build
    the app."""
    service.prepare_service(sys.argv[1:] if argv is None else argv)
    noauth.check(noauth.WSGI_SERVER)
    healthcheck.warn_if_detailed()
    service.check_database()
    return app.setup_app()


application = init_application()
