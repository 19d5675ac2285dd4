"""The cyquota WSGI application: ``setup_app()``, one pipeline.

From the outside in::

    CORS                      [cors]             oslo.middleware
    HTTPProxyToWSGI           [oslo_middleware]  oslo.middleware
    RequestId                                    oslo.middleware
    RequestLog                a log line and the latency histogram
    BodyLimit                 [api] max_request_body_size, every route
    /healthcheck              [healthcheck]      oslo.middleware
    KeystoneAuth or NoAuth    [api] auth_strategy
    /metrics                  [metrics] enabled, policy cyquota:metrics:get
    Microversion              OpenStack-API-Version (``microversion``)
    the pecan app             /, /v1/...

``/healthcheck`` answers without a token, as in other OpenStack services:
load balancers have none. ``/metrics`` names every project's usage, so on
the API port it is for administrators and services; a Prometheus scraper
reads the ``[metrics] listen`` listener (``metrics_listener``). Both serve
``metrics_page``: the counters of ``cyquota.metrics`` and the gauges the
API reads from the database at the scrape.
"""

from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
import pecan
import webob.dec
import webob.exc

from cyquota.api import auth
from cyquota.api import bodylimit
from cyquota.api import config
from cyquota.api import errors
from cyquota.api import metrics_page
from cyquota.api import microversion
from cyquota.api import policy
from cyquota.api import requestlog
from cyquota.conf import CONF
from cyquota.conf import middleware as middleware_conf
from cyquota import context
from cyquota.policies import metrics as metrics_policy


class _Path:
    """``endpoint`` at exactly ``path``, ``application`` elsewhere."""

    def __init__(self, path, endpoint, application):
        self.path = path
        self.endpoint = endpoint
        self.application = application

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') == self.path:
            return self.endpoint(environ, start_response)
        return self.application(environ, start_response)


@webob.dec.wsgify
def _metrics(request):
    """``GET /metrics`` on the API port, for callers policy
    ``cyquota:metrics:get`` allows."""
    if request.method not in ('GET', 'HEAD'):
        return errors.response_for(webob.exc.HTTPMethodNotAllowed(),
                                   request.environ)
    try:
        policy.authorize(context.RequestContext.from_environ(
            request.environ, overwrite=False), metrics_policy.GET, {})
    except Exception as error:  # a 403
        return errors.response_for(error, request.environ)
    return metrics_page.response(request.environ)


@webob.dec.wsgify
def _not_found(request):
    # The healthcheck passes on requests from outside its
    # [healthcheck] allowed_source_ranges.
    return errors.response_for(webob.exc.HTTPNotFound(), request.environ)


def setup_app(app_config=None):
    """Build the WSGI application (the pipeline in the module's docstring).

    :param app_config: ``pecan.make_app`` keyword arguments (default
        ``config.app_config()``).
    """
    middleware_conf.set_defaults(CONF)
    app_config = dict(app_config or config.app_config())
    app = microversion.Middleware(
        pecan.make_app(app_config.pop('root'), **app_config))
    if CONF.metrics.enabled:
        app = _Path('/metrics', _metrics, app)
    if CONF.api.auth_strategy == 'keystone':
        # Imported only here: keystonemiddleware is a tenth of a second
        # of every start of an API on noauth.
        from cyquota.api import keystone_auth
        app = keystone_auth.KeystoneAuth(app, CONF)
    else:
        app = auth.NoAuth(app)
    app = _Path('/healthcheck', healthcheck.Healthcheck(_not_found, CONF),
                app)
    app = bodylimit.BodyLimit(app)
    app = requestlog.RequestLog(app)
    app = request_id.RequestId(app)
    app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, CONF)
    return cors.CORS(app, CONF)
