"""The bed's Nova: nova-api (its WSGI application), conductor, scheduler
and one nova-compute per host on the fake virt driver, with cells (cell0
and cell1) on private databases, unified limits, and Glance and Neutron
stand-ins."""

import shutil

from servers import cached_venv
from servers.openstack_bed import config_files
from servers.openstack_bed import identity

_SERVE = cached_venv.serve_script(
    'from nova.wsgi.osapi_compute import application')


class Nova:
    """Nova's configuration in ``home``/nova and its processes.

    :param urls: ``{'keystone', 'glance', 'neutron'}`` URLs.
    :param databases: ``{'api', 'cell0', 'cell1'}`` URLs.
    :param extra: more ``{section: {option: value}}`` for every config.
    """

    def __init__(self, home, procs, venv, port, urls, databases,
                 transport_url, extra=None):
        self.home = home / 'nova'
        self.home.mkdir()
        self.procs = procs
        self.venv = venv
        self.port = port
        self.url = 'http://127.0.0.1:%d/v2.1' % port
        self.urls = urls
        self.databases = databases
        self.transport_url = transport_url
        self.extra = extra or {}
        self.hosts = []
        # Read from OS_NOVA_CONFIG_DIR by nova-api's WSGI application.
        shutil.copy(venv / 'etc' / 'nova' / 'api-paste.ini', self.home)
        self.config = self.home / 'nova.conf'

    def _common(self, limit_endpoint_id):
        """What every Nova process reads."""
        keystone = self.urls['keystone']
        auth = identity.password_options(keystone, 'nova')
        sections = {
            'DEFAULT': {
                'transport_url': self.transport_url,
                'compute_driver': 'fake.FakeDriverWithoutFakeNodes',
                'my_ip': '127.0.0.1', 'state_path': self.home / 'state'},
            'oslo_concurrency': {'lock_path': self.home / 'locks'},
            'keystone_authtoken': identity.authtoken_options(keystone,
                                                             'nova'),
            # Cyborg binds and unbinds only with a service token.
            'service_user': dict(auth, send_service_user_token='true'),
            'placement': dict(auth, region_name=identity.REGION),
            'cyborg': {'region_name': identity.REGION},
            'glance': {'api_servers': self.urls['glance']},
            'neutron': dict(auth, region_name=identity.REGION,
                            endpoint_override=self.urls['neutron']),
            'compute': {'arq_binding_timeout': 60},
            'quota': {'driver': 'nova.quota.UnifiedLimitsDriver'},
            'vnc': {'enabled': 'false'},
            'os_vif_ovs': {'isolate_vif': 'false'},
        }
        if limit_endpoint_id:
            sections['oslo_limit'] = {
                'auth_type': 'password', 'auth_url': keystone,
                'username': 'nova', 'password': identity.PASSWORD,
                'user_domain_name': identity.DOMAIN, 'system_scope': 'all',
                'endpoint_id': limit_endpoint_id}
        return sections

    def write_config(self, limit_endpoint_id=None):
        """nova.conf (API, conductor, scheduler, nova-manage): the API
        database and cell1's; oslo.limit once the compute endpoint
        exists."""
        config_files.write(self.config, self._common(limit_endpoint_id), {
            'api_database': {'connection': self.databases['api']},
            'database': {'connection': self.databases['cell1']},
            # One process each, not one per CPU.
            'conductor': {'workers': 1}, 'scheduler': {'workers': 1},
        }, self.extra)

    def sync_databases(self):
        """The API database, cell0's mapping, cell1 and both schemas."""
        manage = [self.venv / 'bin' / 'nova-manage', '--config-file',
                  self.config]
        self.procs.run('nova-manage', manage + ['api_db', 'sync'])
        self.procs.run('nova-manage', manage + [
            'cell_v2', 'map_cell0', '--database_connection',
            self.databases['cell0']])
        self.procs.run('nova-manage', manage + [
            'cell_v2', 'create_cell', '--name', 'cell1'])
        self.procs.run('nova-manage', manage + ['db', 'sync'])

    def start_controllers(self):
        """nova-api, nova-conductor and nova-scheduler."""
        serve = self.home / 'serve.py'
        serve.write_text(_SERVE)
        self.procs.start('nova-api', [self.venv / 'bin' / 'python', serve,
                                      self.port],
                         env={'OS_NOVA_CONFIG_DIR': str(self.home)})
        for service in ('conductor', 'scheduler'):
            self.procs.start('nova-' + service, [
                self.venv / 'bin' / ('nova-' + service), '--config-file',
                self.config])

    def wait_for_api(self):
        # The version document of v2.1 wants no token.
        self.procs.wait_until_answering('nova-api', self.url)

    def start_compute(self, host, limit_endpoint_id):
        """nova-compute of ``host`` (also its node's name), with no
        database access, its node identity in a directory of its own."""
        (self.home / host / 'instances').mkdir(parents=True)
        config = config_files.write(
            self.home / ('compute-%s.conf' % host),
            self._common(limit_endpoint_id), {'DEFAULT': {
                'host': host, 'state_path': self.home / host,
                'instances_path': self.home / host / 'instances'}},
            {section: options for section, options in self.extra.items()
             if section not in ('database', 'api_database')})
        self.procs.start('nova-compute-' + host, [
            self.venv / 'bin' / 'nova-compute', '--config-file', config])
        self.hosts.append(host)

    def discover_hosts(self):
        """Map the new computes into cell1 at once (the periodic discovery
        takes half a minute)."""
        self.procs.run('nova-manage', [
            self.venv / 'bin' / 'nova-manage', '--config-file', self.config,
            'cell_v2', 'discover_hosts'])
