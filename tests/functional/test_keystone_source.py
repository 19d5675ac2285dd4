"""The keystone limit source against a real Keystone (from PyPI, on
127.0.0.1): Keystone's flat and strict_two_level models are enforced the
same way as the local source enforces the same numbers."""

import contextlib
import os
import time
import uuid

from keystoneauth1.identity import v3
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_limit import limit as oslo_limit
import pytest
import redis

from cyquota.conf import CONF
from cyquota import exception
from cyquota import quota
from cyquota.quota.limits import cache as limit_cache
from tests import fixtures
from tests.functional import keystone_server

R = 'FPGA'
NAME = 'class:FPGA'
REDIS_URL = os.environ.get('CYQUOTA_TEST_REDIS_URL',
                           'redis://127.0.0.1:6379/0')


class KeystoneAdmin:
    """Keystone's admin API, with the ids of what it created by name
    (Keystone's names get a suffix of this admin's own)."""

    def __init__(self, url):
        self.url = url
        self.session = ks_session.Session(auth=v3.Password(
            auth_url=url, username='admin',
            password=keystone_server.ADMIN_PASSWORD,
            user_domain_id='default', system_scope='all'))
        self.suffix = uuid.uuid4().hex[:8]
        self.ids = {}
        services = self.session.get('%s/services?type=accelerator'
                                    % url).json()['services']
        if services:
            self.service_id = services[0]['id']
            self.endpoint_id = self.session.get(
                '%s/endpoints?service_id=%s' % (url, self.service_id)
            ).json()['endpoints'][0]['id']
            return
        self.service_id = self.post('services', {
            'type': 'accelerator', 'name': 'cyquota'})['id']
        self.endpoint_id = self.post('endpoints', {
            'service_id': self.service_id, 'interface': 'public',
            'url': 'http://127.0.0.1:6780',
            'region_id': keystone_server.REGION})['id']

    def post(self, collection, body):
        plural = collection in ('registered_limits', 'limits')
        key = collection if plural else collection[:-1]
        response = self.session.post(
            '%s/%s' % (self.url, collection),
            json={key: [body] if plural else body})
        created = response.json()[key]
        return created[0] if plural else created

    def registered_limit(self, value):
        """Register FPGA's default limit (the tests share it: Keystone
        refuses to change it once project limits exist)."""
        found = self.session.get('%s/registered_limits?resource_name=%s'
                                 % (self.url, NAME)).json()
        if found['registered_limits']:
            assert found['registered_limits'][0]['default_limit'] == value
            return
        self.post('registered_limits', {
            'service_id': self.service_id,
            'region_id': keystone_server.REGION,
            'resource_name': NAME, 'default_limit': value})

    def domain(self, name):
        self.ids[name] = self.post('domains', {
            'name': name + self.suffix})['id']

    def project(self, name, domain, parent=None):
        body = {'name': name + self.suffix, 'domain_id': self.ids[domain]}
        if parent is not None:
            body['parent_id'] = self.ids[parent]
        self.ids[name] = self.post('projects', body)['id']

    def limit(self, name, value, is_domain=False):
        body = {'service_id': self.service_id,
                'region_id': keystone_server.REGION,
                'resource_name': NAME, 'resource_limit': value,
                ('domain_id' if is_domain else 'project_id'): self.ids[name]}
        return self.post('limits', body)['id']

    def update_limit(self, limit_id, value):
        self.session.patch('%s/limits/%s' % (self.url, limit_id),
                           json={'limit': {'resource_limit': value}})


def use_keystone(admin):
    """Point [oslo_limit] at ``admin``'s Keystone and endpoint and make
    keystone cyquota's limit source."""
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options('password'),
                       group='oslo_limit')
    for name, value in (('auth_type', 'password'), ('auth_url', admin.url),
                        ('username', 'admin'),
                        ('password', keystone_server.ADMIN_PASSWORD),
                        ('user_domain_id', 'default'),
                        ('system_scope', 'all'),
                        ('endpoint_id', admin.endpoint_id)):
        CONF.set_override(name, value, 'oslo_limit')
    # oslo.limit keeps one connection per process: forget the last server's.
    oslo_limit._SDK_CONNECTION = None
    CONF.set_override('limit_source', 'keystone', 'quota')
    quota.QUOTAS.reset()


@pytest.fixture(scope='module')
def keystone_home():
    with keystone_server.home() as home:
        yield home


@pytest.fixture(scope='module')
def keystone_served(keystone_home):
    """``serve(model)``: the URL of the home's Keystone served with that
    enforcement model; the running one is kept while tests ask for the
    same model (a start takes seconds), one model at a time (one port)."""
    stack, served = contextlib.ExitStack(), {}

    def serve(model):
        if model not in served:
            stack.close()
            served.clear()
            served[model] = stack.enter_context(keystone_home.serve(model))
        return served[model]
    yield serve
    stack.close()


@pytest.fixture
def keystone(keystone_served):
    """``keystone(model)`` serves Keystone with that enforcement model and
    returns a KeystoneAdmin of it."""
    yield lambda model: KeystoneAdmin(keystone_served(model))
    for name in list(CONF.oslo_limit):
        CONF.clear_override(name, 'oslo_limit')
    # The next tests count with the embedded limits again.
    for name in ('limit_source', 'enforcement_model'):
        CONF.clear_override(name, 'quota')
    quota.QUOTAS.reset()
    oslo_limit._SDK_CONNECTION = None


def fresh_database(tmp_path):
    fixtures.use_database('sqlite:///%s' % (tmp_path / ('%s.sqlite'
                                                        % uuid.uuid4().hex)))


class Run:
    """A scenario's steps on QUOTAS, with outcomes recorded by name."""

    def __init__(self, ctx, ids):
        self.ctx = ctx
        self.ids = ids
        self.names = {v: k for k, v in ids.items()}
        self.outcomes = []

    def claim(self, name, amount):
        try:
            uuids = quota.QUOTAS.reserve(self.ctx, self.ids[name],
                                         {R: amount})
        except exception.OverQuota as error:
            self.outcomes.append((name, amount, sorted(
                (self.names[o['project_id']], o['scope'], o['limit'],
                 o['used'] + o['reserved']) for o in error.overs)))
            return
        quota.QUOTAS.commit(self.ctx, self.ids[name], uuids)
        self.outcomes.append((name, amount, 'ok'))

    def release(self, name, amount):
        quota.QUOTAS.release(self.ctx, self.ids[name], {R: amount})


def flat_steps(run):
    run.claim('P', 5)
    run.claim('P', 1)
    run.claim('Q', 10)
    run.claim('Q', 1)


FLAT_OUTCOMES = [('P', 5, 'ok'), ('P', 1, [('P', 'project', 5, 5)]),
                 ('Q', 10, 'ok'), ('Q', 1, [('Q', 'project', 10, 10)])]


def strict_steps(run):
    run.claim('B', 8)
    run.claim('C', 8)
    run.claim('D', 4)          # the root's own usage
    run.claim('B', 1)
    run.release('C', 2)
    run.claim('B', 2)
    run.claim('C', 1)
    run.claim('B', 3)
    run.release('B', 10)
    run.claim('E', 10)
    run.claim('E', 1)


STRICT_OUTCOMES = [
    ('B', 8, 'ok'), ('C', 8, 'ok'), ('D', 4, 'ok'),
    ('B', 1, [('D', 'tree', 20, 20)]),
    ('B', 2, 'ok'),
    ('C', 1, [('D', 'tree', 20, 20)]),
    ('B', 3, [('B', 'project', 12, 10), ('D', 'tree', 20, 20)]),
    ('E', 10, 'ok'),
    ('E', 1, [('D', 'tree', 20, 20), ('E', 'project', 10, 10)])]


def run_local(ctx, tmp_path, model, ids, build):
    """The same numbers in the local store, under the same ids."""
    fresh_database(tmp_path)
    CONF.set_override('limit_source', 'local', 'quota')
    CONF.set_override('enforcement_model', model, 'quota')
    quota.QUOTAS.reset()
    store = quota.QUOTAS.limits
    store.set_registered_limit(ctx, R, 10)
    build(store, ids)
    run = Run(ctx, ids)
    return run


def _flat_keystone(keystone):
    """A flat Keystone with the scenario's limits: 10 a project, P 5."""
    admin = keystone('flat')
    admin.registered_limit(10)
    admin.domain('dom')
    admin.project('P', 'dom')
    admin.project('Q', 'dom')
    admin.limit('P', 5)
    return admin


def test_flat(keystone, tmp_path, ctx):
    admin = _flat_keystone(keystone)

    fresh_database(tmp_path)
    use_keystone(admin)
    assert quota.QUOTAS.ledger.model.name == 'flat'
    # What usage-enforcement exemptions by name@domain match.
    assert quota.QUOTAS.limits.project_names(ctx, admin.ids['P']) == {
        'P{0}@dom{0}'.format(admin.suffix)}
    on_keystone = Run(ctx, admin.ids)
    flat_steps(on_keystone)

    def build(store, ids):
        store.set_project_limit(ctx, ids['P'], R, 5)
    on_local = run_local(ctx, tmp_path, 'flat', admin.ids, build)
    flat_steps(on_local)

    assert on_keystone.outcomes == on_local.outcomes == FLAT_OUTCOMES


def test_flat_on_postgresql_and_mariadb(keystone, backend, ctx):
    """Keystone's limits reach the ledger's statements as binds (the local
    store's are read in SQL): typed, or PostgreSQL takes one for text."""
    admin = _flat_keystone(keystone)
    use_keystone(admin)
    run = Run(ctx, admin.ids)
    flat_steps(run)
    assert run.outcomes == FLAT_OUTCOMES


def test_strict_two_level(keystone, tmp_path, ctx):
    admin = keystone('strict_two_level')
    admin.registered_limit(10)
    admin.domain('D')
    for name in 'BCE':
        admin.project(name, 'D')
    admin.project('G', 'D', parent='B')   # Keystone lets a third level be
    admin.limit('D', 20, is_domain=True)
    admin.limit('B', 12)

    fresh_database(tmp_path)
    use_keystone(admin)
    assert quota.QUOTAS.ledger.model.name == 'strict-two-level'
    on_keystone = Run(ctx, admin.ids)
    strict_steps(on_keystone)
    with pytest.raises(exception.HierarchyTooDeep):
        quota.QUOTAS.reserve(ctx, admin.ids['G'], {R: 1})
    tree = quota.QUOTAS.get_project_usage(ctx, admin.ids['C'])[R]['tree']
    assert (tree['root_id'], tree['limit'], tree['used']) == (
        admin.ids['D'], 20, 20)

    def build(store, ids):
        store.set_project(ctx, ids['D'])
        store.set_project_limit(ctx, ids['D'], R, 20)
        for name in 'BCE':
            store.set_project(ctx, ids[name], parent_id=ids['D'])
        store.set_project_limit(ctx, ids['B'], R, 12)
    on_local = run_local(ctx, tmp_path, 'strict-two-level', admin.ids, build)
    strict_steps(on_local)

    assert on_keystone.outcomes == on_local.outcomes == STRICT_OUTCOMES


def test_keystone_specifics(keystone, tmp_path, ctx):
    admin = keystone('flat')
    admin.registered_limit(10)
    admin.domain('dom')
    admin.project('P', 'dom')
    limit_id = admin.limit('P', 5)
    fresh_database(tmp_path)
    use_keystone(admin)
    project = admin.ids['P']
    source = quota.QUOTAS.limits

    # Writes go to Keystone, never through cyquota.
    with pytest.raises(exception.LimitSourceReadOnly) as caught:
        source.set_project_limit(ctx, project, R, 3)
    assert caught.value.code == 409

    # A resource with no registered limit: refused, or with the 'ignore'
    # strategy unlimited.
    with pytest.raises(exception.OverQuota) as caught:
        quota.QUOTAS.reserve(ctx, project, {'GPU': 1})
    assert caught.value.overs[0]['limit'] == 0
    CONF.set_override('unregistered_resource_strategy', 'ignore', 'quota')
    quota.QUOTAS.reserve(ctx, project, {'GPU': 1000})

    # A project Keystone does not know has no parent to enforce a tree by:
    # a 400 (flat enforcement only reads limits, and needs none).
    with pytest.raises(exception.UnknownProject) as caught:
        source.get_parent(ctx, uuid.uuid4().hex)
    assert caught.value.code == 400

    # The cache: Keystone's entries live at most limit_cache_ttl seconds.
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as error:
        keystone_server.unavailable('Redis is not reachable: %s' % error)
    prefix = 'cyquota-test-%s:limits' % uuid.uuid4().hex
    saved = limit_cache.PREFIX
    limit_cache.PREFIX = prefix
    try:
        CONF.set_override('limit_cache_url', REDIS_URL, 'quota')
        CONF.set_override('limit_cache_ttl', 2, 'quota')
        quota.QUOTAS.reset()
        quota.QUOTAS.reserve(ctx, project, {R: 2})       # caches 5
        admin.update_limit(limit_id, 2)
        quota.QUOTAS.reserve(ctx, project, {R: 1})       # still 5, cached
        time.sleep(2.5)
        with pytest.raises(exception.OverQuota) as caught:
            quota.QUOTAS.reserve(ctx, project, {R: 1})
        assert caught.value.overs[0]['limit'] == 2
    finally:
        limit_cache.PREFIX = saved
        keys = list(client.scan_iter(prefix + ':*'))
        if keys:
            client.delete(*keys)
