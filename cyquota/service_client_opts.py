"""keystoneauth's options for a configuration group that reaches one
OpenStack service: session, auth plugin and adapter (``auth_type`` and the
plugin's own, ``timeout``, ``region_name``, ``valid_interfaces``,
``endpoint_override``, ...), as Nova's groups for the services it calls.

Used by cyquota's ``[placement]`` and ``[cyborg]`` groups and by the
``[cyquota_filter]`` group of the filter in Cyborg's process, so it imports
nothing of cyquota.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg


def adapter_opts(service_type):
    """keystoneauth's adapter options, defaulting to ``service_type`` on
    the internal, else the public, interface."""
    opts = ks_loading.get_adapter_conf_options(include_deprecated=False)
    cfg.set_defaults(opts, service_type=service_type,
                     valid_interfaces=['internal', 'public'])
    return opts


def session_opts(timeout=None):
    """keystoneauth's session options; ``timeout`` seconds by default
    (None: wait as long as the server takes)."""
    opts = ks_loading.get_session_conf_options()
    cfg.set_defaults(opts, timeout=timeout)
    return opts


def register_group(conf, group, opts, service_type, timeout=None):
    """Register ``opts`` and keystoneauth's options in a copy of
    ``group`` on ``conf``, requests timing out after ``timeout`` seconds
    by default.

    A group object of conf's own: oslo.config copies a group shallowly
    when it registers it, so the options an auth plugin registers once
    loaded would otherwise show in every configuration that shares it.
    """
    own = cfg.OptGroup(group.name, title=group.title, help=group.help)
    conf.register_group(own)
    conf.register_opts(opts, group=own)
    conf.register_opts(session_opts(timeout), group=own)
    ks_loading.register_auth_conf_options(conf, own.name)
    conf.register_opts(adapter_opts(service_type), group=own)


def sample_opts(service_type, timeout=None):
    """keystoneauth's options as the sample shows them: the auth plugin's
    own are the password plugin's, the usual choice (they depend on
    ``auth_type``)."""
    return (session_opts(timeout)
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password')
            + adapter_opts(service_type))
