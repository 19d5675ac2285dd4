"""``[cyquota_filter]``: the options of cyquota's filter in Cyborg's API
pipeline.

They are registered on the host service's global configuration (Cyborg's
``cyborg.conf``), as keystonemiddleware registers ``[keystone_authtoken]``,
and a value in the filter's paste section (``api-paste.ini``) overrides the
file's. The group holds keystoneauth's session, auth plugin and adapter
options, which reach cyquota's REST API as a service (service type
``accelerator-quota``); the same session reads Cyborg's own REST API
(``cyborg_service_type``, ``cyborg_endpoint_override``).

This module is not under ``cyquota.conf``: importing that package registers
all of cyquota's options on the global configuration, whose ``[api]`` and
``[database]`` groups would collide with Cyborg's.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging

from cyquota import service_client_opts

LOG = logging.getLogger(__name__)

GROUP = 'cyquota_filter'

#: cyquota's service type in the Keystone catalog.
SERVICE_TYPE = 'accelerator-quota'

#: Seconds a call to cyquota or Cyborg may take by default: the filter
#: calls them while a bind waits, and keystoneauth would wait for ever.
TIMEOUT = 30

filter_group = cfg.OptGroup(
    GROUP, title='cyquota filter of Cyborg\'s API',
    help='cyquota\'s WSGI filter in Cyborg\'s API pipeline: a bind of '
         'accelerator requests reserves cyquota\'s quota, an unbind or a '
         'delete releases it. The keystoneauth options of this group reach '
         'cyquota\'s REST API as a service (the service role) and read '
         'Cyborg\'s accelerator requests and device profiles (the admin '
         'role in Cyborg).')

filter_opts = [
    cfg.BoolOpt(
        'fail_open', default=False,
        help='What a bind does when cyquota cannot count it (unreachable, '
             'timed out, a 5xx answer, or any answer other than a '
             'reservation or a quota refusal): true forwards the bind to '
             'Cyborg uncounted, false answers 503 and forwards nothing. '
             'Either way a log line says which. Unbinds and deletes are '
             'always forwarded; a release cyquota misses is logged.'),
    cfg.DictOpt(
        'class_map', default={},
        help='cyquota resources whose Placement resource class has another '
             'name, as RESOURCE:PLACEMENT_CLASS pairs (for example '
             'GPU:PGPU,FPGA:CUSTOM_FPGA), as cyquota\'s [placement] '
             'class_map; a class not listed counts as the resource of its '
             'own name. A device profile group of no cyquota resource is '
             'not counted.'),
    cfg.IntOpt(
        'reservation_expire', default=600, min=1,
        help='Seconds a bind\'s reservation lives before cyquota rolls it '
             'back when nothing commits it. An asynchronous bind '
             '(BindStarted) is resolved by cyquota\'s conductor within '
             'this time; keep it above Nova\'s [compute] '
             'arq_binding_timeout.'),
    cfg.StrOpt(
        'cyborg_service_type', default='accelerator',
        help='Cyborg\'s service type in the Keystone catalog, for reading '
             'its accelerator requests and device profiles (same session, '
             'valid_interfaces and region_name as cyquota\'s).'),
    cfg.URIOpt(
        'cyborg_endpoint_override',
        help='Cyborg\'s API endpoint, including its version '
             '(http://HOST:PORT/v2 or .../accelerator/v2), instead of the '
             'catalog\'s. Cyborg\'s API calls itself through it while a '
             'bind waits, so it must serve more than one request at a '
             'time.'),
]


def register_opts(conf):
    """Register the group on ``conf`` (once; again is harmless)."""
    service_client_opts.register_group(conf, filter_group, filter_opts,
                                       SERVICE_TYPE, timeout=TIMEOUT)


def apply_local_conf(conf, local_conf):
    """Override ``conf``'s ``[cyquota_filter]`` values with the paste
    section's (strings, as paste reads them).

    The auth plugin's own options (``auth_url``, ``password``, ...) exist
    once ``auth_type`` is known, so they are registered first. A key that
    is no option of the group is logged and ignored.
    """
    if 'auth_type' in local_conf:
        conf.set_override('auth_type', local_conf['auth_type'], GROUP)
    auth_type = conf[GROUP].auth_type
    if auth_type:
        loader = ks_loading.get_plugin_loader(auth_type)
        conf.register_opts(ks_loading.get_auth_plugin_conf_options(loader),
                           group=GROUP)
    for name, value in sorted(local_conf.items()):
        if name == 'auth_type':
            continue
        try:
            conf.set_override(name, value, GROUP)
        except cfg.NoSuchOptError:
            LOG.warning('[%s] has no option %r: its value in the paste '
                        'section is ignored', GROUP, name)


def list_opts():
    """The group's options for the sample (``cyquota.cyborg_filter``
    namespace)."""
    return [(filter_group,
             filter_opts + service_client_opts.sample_opts(
                 SERVICE_TYPE, timeout=TIMEOUT))]
