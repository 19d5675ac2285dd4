"""The python-openstackclient plugin module (entry point
``openstack.cli.extension: accelerator_quota``).

Its API name, ``accelerator_quota``, stays clear of the ``accelerator``
API (Cyborg's ``accelerator arq|deployable|device ...`` commands, in
python-openstackclient and python-cyborgclient); the commands are in the
``openstack.accelerator_quota.v1`` entry point group.

``--os-accelerator-quota-api-version`` (``OS_ACCELERATOR_QUOTA_API_VERSION``)
is ``1``, the default, to speak the newest microversion both cyquota and
the commands know, or ``1.Y`` to speak that one.
"""

import re

from osc_lib import exceptions
from osc_lib import utils

from cyquota.osc import client

API_NAME = 'accelerator_quota'
API_VERSION_OPTION = 'os_accelerator_quota_api_version'
API_VERSIONS = ('1',)
DEFAULT_API_VERSION = '1'
_MICROVERSION = re.compile(r'1\.(0|[1-9][0-9]*)')

# (option, environment variable, header) of the identity that a noauth
# cyquota-api trusts.
_IDENTITY = (
    ('project-id', 'OS_ACCELERATOR_QUOTA_PROJECT_ID', 'X-Project-Id'),
    ('user-id', 'OS_ACCELERATOR_QUOTA_USER_ID', 'X-User-Id'),
    ('roles', 'OS_ACCELERATOR_QUOTA_ROLES', 'X-Roles'),
)


def _config_key(option):
    """The key under which the shell's configuration holds ``option``."""
    return 'accelerator_quota_' + option.replace('-', '_')


def check_api_version(version):
    """Accept ``1`` or ``1.Y`` (the shell then skips its own check of
    ``API_VERSIONS``); anything else stops the command."""
    if version in API_VERSIONS or _MICROVERSION.fullmatch(version):
        return True
    raise exceptions.CommandError(
        'Invalid --os-accelerator-quota-api-version %r: 1 (the newest '
        'version both sides know) or 1.Y.' % version)


def make_client(instance):
    """The ``client.Client`` of a shell's client manager ``instance``."""
    version = instance._api_version.get(API_NAME, DEFAULT_API_VERSION)
    config = instance.get_configuration()
    endpoint = instance.get_endpoint_for_service_type(
        client.SERVICE_TYPE, region_name=instance.region_name,
        interface=instance.interface)
    return client.Client(
        instance.session, endpoint, region_name=instance.region_name,
        interface=instance.interface,
        api_version=None if version in API_VERSIONS else version,
        identity_headers={header: config[_config_key(option)]
                          for option, _, header in _IDENTITY
                          if config.get(_config_key(option))})


def build_option_parser(parser):
    """Add the plugin's global options to the shell's ``parser``."""
    parser.add_argument(
        '--os-accelerator-quota-api-version',
        metavar='<version>',
        default=utils.env('OS_ACCELERATOR_QUOTA_API_VERSION'),
        help='cyquota API version: 1.Y to speak that microversion, or %s '
             '(the default) for the newest both sides know '
             '(Env: OS_ACCELERATOR_QUOTA_API_VERSION)' % DEFAULT_API_VERSION)
    for option, variable, header in _IDENTITY:
        parser.add_argument(
            '--os-accelerator-quota-' + option,
            metavar='<%s>' % option,
            default=utils.env(variable),
            help='%s sent to a cyquota-api with [api] auth_strategy = '
                 'noauth (Env: %s)' % (header, variable))
    return parser
