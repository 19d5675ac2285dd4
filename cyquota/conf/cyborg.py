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

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

#: Cyborg's service type in the Keystone catalog.
SERVICE_TYPE = 'accelerator'

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


def _adapter_opts():
    """keystoneauth's adapter options with Cyborg's service type."""
    opts = ks_loading.get_adapter_conf_options(include_deprecated=False)
    cfg.set_defaults(opts, service_type=SERVICE_TYPE,
                     valid_interfaces=['internal', 'public'])
    return opts


def register_opts(conf):
    # A group object of conf's own, as [placement]'s (see there).
    group = cfg.OptGroup(cyborg_group.name, title=cyborg_group.title,
                         help=cyborg_group.help)
    conf.register_group(group)
    conf.register_opts(cyborg_opts, group=group)
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group.name)
    conf.register_opts(_adapter_opts(), group=group)


def configured(conf):
    """Whether the conductor reads Cyborg: an auth plugin is set."""
    return conf.cyborg.auth_type is not None


def list_opts():
    # The sample shows the password plugin's options, as [placement]'s.
    return {cyborg_group: (
        cyborg_opts
        + ks_loading.get_session_conf_options()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options('password')
        + _adapter_opts())}
