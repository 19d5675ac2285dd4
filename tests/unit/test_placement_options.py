"""The ``[placement]`` options of the cloud's Placement, and their check at
start-up (``validation.validate``) when ``source = placement``."""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import pytest

from cyquota.conf import api
from cyquota.conf import budgets
from cyquota.conf import conductor
from cyquota.conf import cyborg
from cyquota.conf import database
from cyquota.conf import enforcement
from cyquota.conf import leases
from cyquota.conf import metrics
from cyquota.conf import placement
from cyquota.conf import quota
from cyquota.conf import validation


def _conf(tmp_path, text=''):
    """A configuration of its own (an auth plugin registers options of its
    own in [placement]) parsed from ``text``."""
    conf = cfg.ConfigOpts()
    for module in (api, budgets, conductor, cyborg, database, enforcement,
                   leases, metrics, placement, quota):
        module.register_opts(conf)
    path = tmp_path / 'cyquota.conf'
    path.write_text(text)
    conf(['--config-file', str(path)], project='cyquota',
         default_config_files=[])
    return conf


def test_defaults(tmp_path):
    group = _conf(tmp_path).placement
    assert group.source == 'local'
    assert group.class_map == {}
    assert group.service_type == 'placement'
    assert group.valid_interfaces == ['internal', 'public']
    for name in ('auth_type', 'auth_section', 'region_name',
                 'endpoint_override', 'timeout', 'cafile', 'insecure'):
        assert name in group


def test_class_map_reads_pairs(tmp_path):
    conf = _conf(tmp_path, '[placement]\nclass_map = GPU:PGPU, '
                           'FPGA:CUSTOM_FPGA\n')
    assert conf.placement.class_map == {'GPU': 'PGPU',
                                        'FPGA': 'CUSTOM_FPGA'}


def test_sample_lists_the_keystoneauth_options():
    names = {opt.dest for opt in placement.list_opts()[
        placement.placement_group]}
    assert {'source', 'class_map',
            'auth_type', 'auth_url', 'password', 'timeout', 'service_type',
            'valid_interfaces', 'region_name', 'endpoint_override',
            'default_forbidden_member_prefix'} <= names


def test_a_local_source_needs_no_placement_options(tmp_path):
    validation.validate(_conf(tmp_path))


ADMIN_TOKEN = ('[placement]\nsource = placement\nauth_type = admin_token\n'
               'endpoint = http://127.0.0.1:8778\ntoken = s3cret-pw\n')


def test_admin_token_plugin_passes(tmp_path):
    validation.validate(_conf(tmp_path, ADMIN_TOKEN + 'class_map = GPU:PGPU'
                              '\nregion_name = RegionOne\n'))


def test_password_plugin_passes(tmp_path):
    validation.validate(_conf(tmp_path, (
        '[placement]\nsource = placement\nauth_type = password\n'
        'auth_url = http://127.0.0.1:5000/v3\nusername = cyquota\n'
        'password = s3cret-pw\nproject_name = service\n'
        'user_domain_name = Default\nproject_domain_name = Default\n')))


REFUSED = [
    ('', '[placement] source: Valid values are [local, placement], but '
         "found 'cloud'", '[placement]\nsource = cloud\n'),
    ('[placement]\nsource = placement\n',
     '[placement] auth_type: not set: Keystone credentials are needed '
     '(for example auth_type = password)', ''),
    ('[placement]\nsource = placement\n',
     "[placement] auth_type: no keystoneauth plugin named 'magic'",
     'auth_type = magic\n'),
    ('[placement]\nsource = placement\n',
     '[placement] auth_url: not set (auth_type password needs the Keystone '
     'endpoint)', 'auth_type = password\n'),
    ('[placement]\nsource = placement\n',
     '[placement] identity_provider: not set (auth_type v3oidcpassword '
     'needs it)', 'auth_type = v3oidcpassword\n'
     'auth_url = http://127.0.0.1:5000/v3\n'
     'discovery_endpoint = http://127.0.0.1:5000/.well-known/openid\n'),
    ('[placement]\nsource = placement\n',
     "[placement] auth_type: the 'v3applicationcredential' plugin cannot be "
     'loaded: You must provide either an application credential ID or an '
     'application credential name and user.',
     'auth_type = v3applicationcredential\n'
     'auth_url = http://127.0.0.1:5000/v3\n'
     'application_credential_secret = s3cret-pw\n'),
    ('[placement]\nsource = placement\n',
     '[placement] endpoint: not set (auth_type admin_token has no catalog '
     'to find Placement in)', 'auth_type = admin_token\ntoken = s3cret-pw\n'),
    (ADMIN_TOKEN.replace('http://127.0.0.1:8778', 'ftp://placement'),
     "[placement] endpoint: 'ftp://placement' is not a http:// or "
     'https:// URL', ''),
    (ADMIN_TOKEN, "[placement] endpoint_override: 'placement:8778' is not a "
                  'http:// or https:// URL',
     'endpoint_override = placement:8778\n'),
    (ADMIN_TOKEN, "[placement] valid_interfaces: 'private' is not a valid "
                  'value for valid_interfaces. Valid values are public, '
                  'internal or admin', 'valid_interfaces = private\n'),
    (ADMIN_TOKEN, "[placement] class_map: 'GRAPHICS' (for GPU) is not a "
                  'Placement resource class (a standard class or '
                  'CUSTOM_[A-Z0-9_]+)', 'class_map = GPU:GRAPHICS\n'),
    (ADMIN_TOKEN, '[placement] class_map: PGPU is the class of both FPGA '
                  'and GPU', 'class_map = GPU:PGPU,FPGA:PGPU\n'),
]


@pytest.mark.parametrize('base, message, extra', REFUSED)
def test_refused_with_one_line(tmp_path, base, message, extra):
    with pytest.raises(validation.InvalidOption) as caught:
        validation.validate(_conf(tmp_path, base + extra))
    assert str(caught.value) == message


def test_admin_token_may_name_placement_by_endpoint_override(tmp_path):
    validation.validate(_conf(tmp_path, (
        '[placement]\nsource = placement\nauth_type = admin_token\n'
        'token = s3cret-pw\nendpoint_override = http://127.0.0.1:8778\n')))


def test_the_loaded_plugin_is_the_configured_one(tmp_path):
    conf = _conf(tmp_path, ADMIN_TOKEN)
    validation.validate(conf)
    auth = ks_loading.load_auth_from_conf_options(conf, 'placement')
    assert auth.get_endpoint(None) == 'http://127.0.0.1:8778'
