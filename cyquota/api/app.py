"""The cyquota WSGI application: ``setup_app()``."""

from oslo_middleware import request_id
import pecan

from cyquota.api import config


def setup_app(app_config=None):
    """Build the WSGI application.

    :param app_config: ``pecan.make_app`` keyword arguments (default
        ``config.app_config()``).
    :returns: the pecan app wrapped in oslo.middleware's RequestId, which
        gives every request an id ``req-<uuid>`` and returns it in the
        ``X-Openstack-Request-Id`` header.
    """
    app_config = dict(app_config or config.app_config())
    app = pecan.make_app(app_config.pop('root'), **app_config)
    return request_id.RequestId(app)
