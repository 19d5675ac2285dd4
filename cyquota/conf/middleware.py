"""cyquota's defaults for oslo.middleware's options: ``[healthcheck]``
checks the database, ``[cors]`` lets a browser send and read the headers
the API uses. Explicit values in the configuration still win."""

from oslo_config import cfg
from oslo_middleware import cors
from oslo_middleware.healthcheck import opts as healthcheck_opts

#: ``[healthcheck] backends`` unless configured: the database answers
#: ``SELECT 1`` (``cyquota.api.healthcheck``).
HEALTHCHECK_BACKENDS = ['cyquota_database']


def set_defaults(conf):
    """Register the healthcheck's options on ``conf`` and set cyquota's
    defaults of the healthcheck and CORS options."""
    cfg.set_defaults(healthcheck_opts.HEALTHCHECK_OPTS,
                     backends=HEALTHCHECK_BACKENDS)
    conf.register_opts(healthcheck_opts.HEALTHCHECK_OPTS,
                       group='healthcheck')
    cors.set_defaults(
        allow_headers=['Content-Type', 'X-Auth-Token',
                       'X-Openstack-Request-Id', 'X-Project-Id',
                       'X-User-Id', 'X-Roles', 'OpenStack-API-Version'],
        expose_headers=['X-Openstack-Request-Id', 'OpenStack-API-Version'],
        allow_methods=['GET', 'PUT', 'POST', 'DELETE', 'HEAD'])
