"""[cyborg] options: Cyborg's API, read by the conductor to resolve the
binds that cyquota's filter in Cyborg's pipeline left reserved.

A bind that Cyborg finishes asynchronously (``BindStarted`` when its
PATCH is answered) keeps its reservation; with this group configured (an
``auth_type``), the conductor reads each such ARQ every
``bind_check_interval`` seconds and commits or rolls it back. The group
holds keystoneauth's session, auth plugin and adapter options
(``auth_type``, ``region_name``, ``valid_interfaces``,
``endpoint_override``, ...); the user needs Cyborg's admin role to read
every project's accelerator requests.
"""

from oslo_config import cfg

from cyquota import service_client_opts

#: Cyborg's service type in the Keystone catalog.
SERVICE_TYPE = 'accelerator'

#: Seconds a read of Cyborg may take by default: keystoneauth would wait
#: for ever, holding up the conductor's other periodic tasks.
TIMEOUT = 30

cyborg_group = cfg.OptGroup(
    'cyborg', title='Cyborg options',
    help='Cyborg\'s API, read by the conductor to commit or roll back the '
         'reservations of binds of accelerator requests that Cyborg '
         'finished after answering (doc/source/cyborg.rst). Unset '
         'auth_type: the conductor does not read Cyborg, and such '
         'reservations expire.')

cyborg_opts = [
    cfg.IntOpt(
        'bind_check_interval', default=30, min=1,
        help='Seconds between two reads of the accelerator requests whose '
             'binds are still reserved: Bound commits, BindFailed, Unbound '
             'or a deleted request rolls back, a bind under way waits (its '
             'reservation expires if it never ends).'),
]


def register_opts(conf):
    service_client_opts.register_group(conf, cyborg_group, cyborg_opts,
                                       SERVICE_TYPE, timeout=TIMEOUT)


def configured(conf):
    """Whether the conductor reads Cyborg: an auth plugin is set."""
    return conf.cyborg.auth_type is not None


def list_opts():
    return {cyborg_group: (cyborg_opts + service_client_opts.sample_opts(
        SERVICE_TYPE, timeout=TIMEOUT))}
