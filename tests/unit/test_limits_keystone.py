"""The keystone source without a Keystone: configuration, the read-only
write API, and a Keystone that cannot be reached (a closed port on
127.0.0.1). Its reads are tested against a real Keystone in
tests/functional/test_keystone_source.py."""

from keystoneauth1 import loading as ks_loading
from oslo_limit import limit as oslo_limit
import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota import quota
from cyquota.quota import limits
from cyquota.quota.limits import keystone

R = 'FPGA'


@pytest.fixture
def unreachable():
    """[oslo_limit] pointing at a port nothing listens on."""
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options('password'),
                       group='oslo_limit')
    for name, value in (('auth_type', 'password'),
                        ('auth_url', 'http://127.0.0.1:9/v3'),
                        ('username', 'cyquota'), ('password', 'secret'),
                        ('user_domain_id', 'default'),
                        ('system_scope', 'all'), ('endpoint_id', 'e' * 32)):
        CONF.set_override(name, value, 'oslo_limit')
    oslo_limit._SDK_CONNECTION = None
    yield
    for name in list(CONF.oslo_limit):
        CONF.clear_override(name, 'oslo_limit')
    oslo_limit._SDK_CONNECTION = None


def test_resource_name_format_must_name_the_resource():
    CONF.set_override('keystone_resource_name_format', 'class:FPGA', 'quota')
    with pytest.raises(exception.Invalid) as caught:
        keystone.KeystoneLimitSource()
    assert 'keystone_resource_name_format' in str(caught.value)


@pytest.mark.parametrize('strategy, limit', [('require', 0), ('ignore', -1)])
def test_unregistered_resource_strategy(strategy, limit):
    CONF.set_override('unregistered_resource_strategy', strategy, 'quota')
    assert keystone.KeystoneLimitSource().unregistered_limit == limit


def test_keystone_model_names_map_to_cyquota_names():
    assert keystone.MODEL_NAMES == {'flat': 'flat',
                                    'strict_two_level': 'strict-two-level'}
    assert set(keystone.MODEL_NAMES.values()) == set(limits.MODELS)


@pytest.mark.parametrize('write, args', [
    ('set_registered_limit', (R, 5)),
    ('set_project_limit', ('p1', R, 5)),
    ('delete_project_limit', ('p1', R)),
    ('set_project', ('p1',))])
def test_writes_are_refused_as_read_only(ctx, write, args):
    source = keystone.KeystoneLimitSource()
    with pytest.raises(exception.LimitSourceReadOnly) as caught:
        getattr(source, write)(ctx, *args)
    assert caught.value.code == 409


def test_unreachable_keystone_is_a_503(sqlite_db, ctx, unreachable):
    CONF.set_override('limit_source', 'keystone', 'quota')
    quota.QUOTAS.reset()
    with pytest.raises(exception.LimitSourceUnavailable) as caught:
        quota.QUOTAS.reserve(ctx, 'p1', {R: 1})
    assert caught.value.code == 503
    assert 'keystone' in str(caught.value)
