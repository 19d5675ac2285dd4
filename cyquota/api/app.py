"""The cyquota WSGI application: ``setup_app()``, one pipeline.

From the outside in::

    CORS                      [cors]             oslo.middleware
    HTTPProxyToWSGI           [oslo_middleware]  oslo.middleware
    RequestId                                    oslo.middleware
    RequestLog                a log line and the latency histogram
    operator endpoints        /healthcheck ([healthcheck], oslo.middleware)
                              /metrics ([metrics])
    KeystoneAuth              [api] auth_strategy = keystone only
    the pecan app             /, /v1/...

The operator endpoints answer without a token, as in other OpenStack
services: load balancers and Prometheus have none.
"""

from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
import pecan
import webob
import webob.dec
import webob.exc

from cyquota.api import auth
from cyquota.api import config
from cyquota.api import errors
from cyquota.api import requestlog
from cyquota.conf import CONF
from cyquota.conf import middleware as middleware_conf
from cyquota.metrics import exposition


class _OperatorEndpoints:
    """``/healthcheck`` and ``/metrics`` beside the API, by exact path."""

    def __init__(self, api):
        self.api = api
        self.routes = {'/healthcheck': healthcheck.Healthcheck(
            _not_found, CONF)}
        if CONF.metrics.enabled:
            self.routes['/metrics'] = _metrics

    def __call__(self, environ, start_response):
        endpoint = self.routes.get(environ.get('PATH_INFO', ''), self.api)
        return endpoint(environ, start_response)


@webob.dec.wsgify
def _metrics(request):
    if request.method not in ('GET', 'HEAD'):
        return errors.response_for(webob.exc.HTTPMethodNotAllowed(),
                                   request.environ)
    try:
        body = exposition.text()
    except Exception as error:  # the database away, say: logged, a 500
        return errors.response_for(error, request.environ)
    response = webob.Response(body=body)
    response.headers['Content-Type'] = exposition.CONTENT_TYPE
    return response


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
    app = pecan.make_app(app_config.pop('root'), **app_config)
    if CONF.api.auth_strategy == 'keystone':
        app = auth.KeystoneAuth(app, CONF)
    app = _OperatorEndpoints(app)
    app = requestlog.RequestLog(app)
    app = request_id.RequestId(app)
    app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, CONF)
    return cors.CORS(app, CONF)
