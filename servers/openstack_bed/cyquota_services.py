"""cyquota in the bed: cyquota-api (Keystone tokens) and cyquota-conductor
on the bed's RabbitMQ vhost, the ledger on a private PostgreSQL or MariaDB
database, devices from the bed's Placement with leases written back."""

import os

from servers import api_server
from servers.openstack_bed import config_files
from servers.openstack_bed import identity

#: cyquota's service type in the catalog, as its devstack plugin has it.
SERVICE_TYPE = 'accelerator-quota'
_SERVICES = ('cyquota-api', 'cyquota-conductor')


class Cyquota:
    """cyquota's configuration in ``home``/cyquota and its processes.

    :param database: the ledger's URL.
    :param cyborg_reads: the conductor reads Cyborg's ARQs (``[cyborg]``,
        for the binds Cyborg finishes late), as with cyquota's filter.
    :param extra: more ``{section: {option: value}}`` for cyquota.conf.
    """

    def __init__(self, home, procs, port, keystone_url, database,
                 transport_url, cyborg_reads=False, extra=None):
        self.home = home / 'cyquota'
        self.home.mkdir()
        self.procs = procs
        self.port = port
        self.url = 'http://127.0.0.1:%d' % port
        self.keystone_url = keystone_url
        self.database = database
        self.transport_url = transport_url
        self.cyborg_reads = cyborg_reads
        self.extra = extra or {}
        self.config = self.home / 'cyquota.conf'
        # The tests' cyquota: the checkout they run from.
        self.env = {'PYTHONPATH': os.environ.get('PYTHONPATH', ''),
                    'PYTHONWARNINGS': 'ignore'}
        self.limit_endpoint_id = None
        self.write_config()

    def write_config(self, limit_endpoint_id=None):
        """cyquota.conf; ``[oslo_limit]`` (read with ``[quota]
        limit_source = keystone``) once ``limit_endpoint_id`` exists."""
        if limit_endpoint_id:
            self.limit_endpoint_id = limit_endpoint_id
        keystone = self.keystone_url
        sections = {
            'DEFAULT': {'transport_url': self.transport_url},
            'database': {'connection': self.database},
            'api': {'host': '127.0.0.1', 'port': self.port,
                    'auth_strategy': 'keystone'},
            'keystone_authtoken': identity.authtoken_options(keystone,
                                                             'cyquota'),
            'placement': dict(identity.password_options(keystone, 'cyquota'),
                              region_name=identity.REGION,
                              source='placement', write_leases='true'),
        }
        if self.cyborg_reads:
            sections['cyborg'] = dict(
                identity.password_options(keystone, 'cyquota'),
                region_name=identity.REGION)
        if self.limit_endpoint_id:
            sections['oslo_limit'] = {
                'auth_type': 'password', 'auth_url': keystone,
                'username': 'cyquota', 'password': identity.PASSWORD,
                'user_domain_name': identity.DOMAIN, 'system_scope': 'all',
                'endpoint_id': self.limit_endpoint_id}
        config_files.write(self.config, sections, self.extra)

    def sync_database(self):
        self.procs.run('cyquota-manage', [
            api_server.BIN / 'cyquota-manage', '--config-file', self.config,
            'db', 'sync'], env=self.env)

    def start(self):
        for service in _SERVICES:
            self.procs.start(service, [
                api_server.BIN / service, '--config-file', self.config],
                env=self.env)

    def wait(self):
        self.procs.wait_until_answering('cyquota-api', self.url + '/',
                                        watched=('cyquota-conductor',))

    def restart(self, sections):
        """Stop both, add ``sections`` (``{section: {option: value}}``) to
        the configuration, start both again."""
        self.stop()
        for section, options in sections.items():
            self.extra.setdefault(section, {}).update(options)
        self.write_config()
        self.start()
        self.wait()

    def stop(self):
        self.procs.stop(*[service for service in _SERVICES
                          if service in self.procs.running])
