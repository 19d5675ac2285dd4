"""The cyquota WSGI application: ``setup_app()``."""

from oslo_middleware import request_id
import pecan

from cyquota.api import auth
from cyquota.api import config
from cyquota.api import requestlog
from cyquota.conf import CONF


def setup_app(app_config=None):
    """Build the WSGI application.

    :param app_config: ``pecan.make_app`` keyword arguments (default
        ``config.app_config()``).
    :returns: the pecan app, behind keystonemiddleware's auth_token
        (``auth.KeystoneAuth``) when ``[api] auth_strategy = keystone``,
        then ``requestlog.RequestLog``, all wrapped in oslo.middleware's
        RequestId, which gives every request (a refused one too) an id
        ``req-<uuid>`` and returns it in the ``X-Openstack-Request-Id``
        header.
    """
    app_config = dict(app_config or config.app_config())
    app = pecan.make_app(app_config.pop('root'), **app_config)
    if CONF.api.auth_strategy == 'keystone':
        app = auth.KeystoneAuth(app, CONF)
    return request_id.RequestId(requestlog.RequestLog(app))
