"""The ``[cyborg]`` options of the conductor's reads of Cyborg, and their
check at start-up (``validation.validate``) once an auth plugin is set."""

import pytest

from cyquota.conf import cyborg
from cyquota.conf import validation
from tests.unit import test_placement_options


def _conf(tmp_path, text=''):
    return test_placement_options._conf(tmp_path, text)


def test_defaults_leave_cyborg_unread(tmp_path):
    conf = _conf(tmp_path)
    assert not cyborg.configured(conf)
    assert conf.cyborg.service_type == 'accelerator'
    assert conf.cyborg.valid_interfaces == ['internal', 'public']
    assert conf.cyborg.bind_check_interval == 30
    assert conf.cyborg.timeout == 30
    validation.validate(conf)


def test_sample_lists_the_keystoneauth_options():
    names = {opt.dest for opt in cyborg.list_opts()[cyborg.cyborg_group]}
    assert {'bind_check_interval', 'auth_type', 'auth_url', 'password',
            'service_type', 'valid_interfaces', 'endpoint_override'} <= names


def test_password_plugin_passes(tmp_path):
    conf = _conf(tmp_path, (
        '[cyborg]\nauth_type = password\n'
        'auth_url = http://127.0.0.1:5000/v3\nusername = cyquota\n'
        'password = s3cret-pw\nproject_name = service\n'
        'user_domain_name = Default\nproject_domain_name = Default\n'))
    assert cyborg.configured(conf)
    validation.validate(conf)


@pytest.mark.parametrize('text, message', [
    ('[cyborg]\nauth_type = password\n',
     '[cyborg] auth_url: not set (auth_type password needs the Keystone '
     'endpoint)'),
    ('[cyborg]\nauth_type = admin_token\ntoken = s3cret-pw\n',
     '[cyborg] endpoint: not set (auth_type admin_token has no catalog to '
     'find Cyborg in)'),
    ('[cyborg]\nauth_type = none\nendpoint_override = cyborg:6666\n',
     "[cyborg] endpoint_override: 'cyborg:6666' is not a http:// or "
     'https:// URL'),
])
def test_refused_with_one_line(tmp_path, text, message):
    with pytest.raises(validation.InvalidOption) as caught:
        validation.validate(_conf(tmp_path, text))
    assert str(caught.value) == message
