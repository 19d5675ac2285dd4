"""The whole configuration checked at once, before a command does anything.

oslo.config checks a value (choices, bounds, URL schemes) only when it is
read, which for most options is the first request or the first periodic
run: a typo would start a service that then fails every request. Every
console script calls :func:`validate` right after parsing instead, and
stops with the one line of :class:`InvalidOption`.

Besides every registered value, it checks what oslo.config cannot: that
the plugins the options name have an entry point (through stevedore, as
they are loaded later) and that the URLs parse for the library that will
use them, ports included. A URL in a message has its password masked
(``redaction.mask_url``), also one that does not parse.
"""

import importlib.metadata

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import oslo_messaging
import sqlalchemy as sa
from stevedore import named as stevedore_named

from cyquota.conf import cyborg as cyborg_conf
from cyquota import periods
from cyquota import redaction
from cyquota import resource_classes

_HTTP = ('http', 'https')
#: The URL schemes redis-py's ``Redis.from_url`` takes.
_REDIS = ('redis', 'rediss', 'unix')
_PORTS = range(1, 65536)


class InvalidOption(Exception):
    """An option's value cannot work; the message is one line that starts
    with the option: ``[group] option: why``."""

    def __init__(self, group, name, reason):
        self.group = group or 'DEFAULT'
        self.name = name
        super().__init__('[%s] %s: %s' % (self.group, name, reason))


def validate(conf):
    """Check every option of the parsed ``conf``.

    :raises InvalidOption: for the first option found at fault.
    """
    _check_values(conf)
    _check_transport(conf)
    _check_database(conf)
    _check_entry_point(conf, 'quota', 'limit_source', 'cyquota.limit_sources')
    try:
        periods.Periods(conf.budgets.period)
    except ValueError as error:
        raise InvalidOption('budgets', 'period', error)
    if conf.quota.limit_cache_url:
        _check_url('quota', 'limit_cache_url', conf.quota.limit_cache_url,
                   _REDIS)
    if conf.api.auth_strategy == 'keystone':
        _check_authtoken(conf)
    if conf.quota.limit_source == 'keystone':
        _check_oslo_limit(conf)
    if conf.placement.source == 'placement':
        check_placement(conf)
    elif conf.placement.write_leases:
        raise InvalidOption('placement', 'write_leases',
                            'needs source = placement (leases are written '
                            'to the cloud\'s Placement)')
    if cyborg_conf.configured(conf):
        _check_service_client(conf, 'cyborg', 'Cyborg')


def _reason(error):
    # "Value for option X from LocationInfo(...) is not valid: <reason>"
    return str(error).rpartition(' is not valid: ')[2]


def _check_values(conf):
    """Read every registered option, so oslo.config checks each value."""
    for name in conf:
        try:
            item = conf[name]
        except cfg.ConfigSourceValueError as error:
            raise InvalidOption(None, name, _reason(error))
        if not isinstance(item, cfg.ConfigOpts.GroupAttr):
            continue
        for option in item:
            try:
                item[option]
            except cfg.ConfigSourceValueError as error:
                raise InvalidOption(name, option, _reason(error))


def _installed(namespace):
    return ', '.join(sorted(
        {ep.name for ep in importlib.metadata.entry_points(group=namespace)}))


def _check_plugin(group, option, namespace, name, what=''):
    """Load the plugin ``name`` of ``namespace`` through stevedore."""
    def unloadable(manager, entry_point, error):
        raise InvalidOption(group, option, '%s%r cannot be loaded: %s'
                            % (what, name, error))

    # A missing name is reported below, not logged by stevedore.
    manager = stevedore_named.NamedExtensionManager(
        namespace, [name], on_load_failure_callback=unloadable,
        on_missing_entrypoints_callback=None)
    if name not in manager.names():
        raise InvalidOption(group, option, '%s%r has no entry point in the %s '
                            'group (installed: %s)' % (
                                what, name, namespace, _installed(namespace)))


def _check_entry_point(conf, group, option, namespace):
    _check_plugin(group, option, namespace, conf[group][option])


def _check_url(group, option, value, schemes):
    try:
        cfg.types.URI(schemes=list(schemes))(value)
    except ValueError:
        raise InvalidOption(group, option, '%s is not a %s URL' % (
            _shown(value), ' or '.join('%s://' % s for s in schemes)))


def _shown(url):
    """``url`` quoted, its password masked, for a message."""
    return redaction.mask_url(repr(url))


def _bad_port(url):
    return ('the port of %s is not a number from 1 to 65535'
            % _shown(url))


def _check_transport(conf):
    try:
        url = oslo_messaging.TransportURL.parse(conf, conf.transport_url)
    except oslo_messaging.InvalidTransportURL as error:
        raise InvalidOption(None, 'transport_url',
                            redaction.mask_url(error))
    except ValueError:  # oslo.messaging's int() of the port
        raise InvalidOption(None, 'transport_url',
                            _bad_port(conf.transport_url))
    if any(host.port is not None and host.port not in _PORTS
           for host in url.hosts):
        raise InvalidOption(None, 'transport_url',
                            _bad_port(conf.transport_url))
    _check_plugin(None, 'transport_url', 'oslo.messaging.drivers',
                  url.transport, what='the transport ')


#: The database URL schemes of the drivers cyquota installs.
_INSTALLED_DRIVERS = ('postgresql+psycopg://', 'mysql+pymysql://')


def _check_database(conf):
    value = conf.database.connection
    try:
        url = sa.engine.make_url(value)
        url.get_dialect().import_dbapi()
    except sa.exc.NoSuchModuleError:
        raise InvalidOption('database', 'connection',
                            'no SQLAlchemy dialect for %r' % url.drivername)
    except sa.exc.ArgumentError:
        raise InvalidOption('database', 'connection',
                            '%s is not a database URL' % _shown(value))
    except ValueError:  # SQLAlchemy's int() of the port
        raise InvalidOption('database', 'connection', _bad_port(value))
    except ImportError as error:
        raise InvalidOption('database', 'connection',
                            'the driver of %s is not installed (%s); '
                            'cyquota installs %s' % (
                                url.drivername, error, ' and '.join(
                                    _INSTALLED_DRIVERS)))
    if url.port is not None and url.port not in _PORTS:
        raise InvalidOption('database', 'connection', _bad_port(value))


def _check_keystone_auth(conf, group, required):
    """The keystoneauth plugin of ``[group] auth_type`` (a stevedore entry
    point) and its ``auth_url``."""
    ks_loading.register_auth_conf_options(conf, group)
    auth_type = conf[group].auth_type
    if not auth_type:
        if required:
            raise InvalidOption(group, 'auth_type',
                                'not set: Keystone credentials are needed '
                                '(for example auth_type = password)')
        return
    try:
        loader = ks_loading.get_plugin_loader(auth_type)
    except ks_exceptions.NoMatchingPlugin:
        raise InvalidOption(group, 'auth_type',
                            'no keystoneauth plugin named %r' % auth_type)
    conf.register_opts(ks_loading.get_auth_plugin_conf_options(loader),
                       group=group)
    if 'auth_url' in conf[group]:
        if not conf[group].auth_url:
            raise InvalidOption(group, 'auth_url', 'not set (auth_type %s '
                                'needs the Keystone endpoint)' % auth_type)
        _check_url(group, 'auth_url', conf[group].auth_url, _HTTP)


def _check_authtoken(conf):
    # Importing auth_token registers [keystone_authtoken].
    from keystonemiddleware import auth_token  # noqa: F401
    uri = conf.keystone_authtoken.www_authenticate_uri
    if uri:
        _check_url('keystone_authtoken', 'www_authenticate_uri', uri, _HTTP)
    _check_keystone_auth(conf, 'keystone_authtoken', required=False)


def _check_oslo_limit(conf):
    # oslo.limit registers [oslo_limit] (session, adapter, endpoint
    # options) when imported.
    from oslo_limit import limit  # noqa: F401
    _check_keystone_auth(conf, 'oslo_limit', required=True)
    override = conf.oslo_limit.endpoint_override
    if override:
        _check_url('oslo_limit', 'endpoint_override', override, _HTTP)


def _check_service_client(conf, group, service):
    """The keystoneauth options of ``group`` that reach ``service``: its
    auth plugin loads with the options it needs, an endpoint is known and
    the adapter options agree."""
    _check_keystone_auth(conf, group, required=True)
    try:
        ks_loading.load_auth_from_conf_options(conf, group)
    except ks_exceptions.MissingRequiredOptions as error:
        raise InvalidOption(group, error.options[0].dest,
                            'not set (auth_type %s needs it)'
                            % conf[group].auth_type)
    except (ks_exceptions.ClientException, ValueError, TypeError) as error:
        raise InvalidOption(group, 'auth_type',
                            'the %r plugin cannot be loaded: %s' % (
                                conf[group].auth_type,
                                redaction.mask_url(error)))
    override = conf[group].endpoint_override
    if override:
        _check_url(group, 'endpoint_override', override, _HTTP)
    # admin_token has no catalog: its endpoint names the service itself.
    if 'endpoint' in conf[group]:
        endpoint = conf[group].endpoint
        if endpoint:
            _check_url(group, 'endpoint', endpoint, _HTTP)
        elif not override:
            raise InvalidOption(group, 'endpoint',
                                'not set (auth_type %s has no catalog to '
                                'find %s in)'
                                % (conf[group].auth_type, service))
    try:
        ks_loading.adapter.process_conf_options(conf[group], {})
    except TypeError as error:
        raise InvalidOption(group, 'valid_interfaces', str(error))


def check_placement(conf):
    """The options that reach the cloud's Placement: its auth plugin loads
    with the options it needs, the adapter options agree, and
    ``class_map`` parses.

    :raises InvalidOption: for the first option found at fault.
    """
    _check_service_client(conf, 'placement', 'Placement')
    try:
        resource_classes.class_map(conf)
    except ValueError as error:
        raise InvalidOption('placement', 'class_map', str(error))
