"""The bed's Placement: its WSGI application behind keystonemiddleware,
on a private database."""

from servers import cached_venv
from servers.openstack_bed import config_files
from servers.openstack_bed import identity

_SERVE = cached_venv.serve_script(
    'from placement.wsgi.api import application')


class Placement:
    """Placement's configuration in ``home``/placement and its process."""

    def __init__(self, home, procs, venv, port, keystone_url, database,
                 extra=None):
        self.home = home / 'placement'
        self.home.mkdir()
        self.procs = procs
        self.venv = venv
        self.port = port
        self.url = 'http://127.0.0.1:%d' % port
        # Placement reads placement.conf from OS_PLACEMENT_CONFIG_DIR.
        self.config = config_files.write(self.home / 'placement.conf', {
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': identity.authtoken_options(
                keystone_url, 'placement'),
            'placement_database': {'connection': database},
        }, extra)

    def sync_database(self):
        self.procs.run('placement-manage', [
            self.venv / 'bin' / 'placement-manage', '--config-file',
            self.config, 'db', 'sync'])

    def start(self):
        serve = self.home / 'serve.py'
        serve.write_text(_SERVE)
        self.procs.start('placement', [self.venv / 'bin' / 'python', serve,
                                       self.port],
                         env={'OS_PLACEMENT_CONFIG_DIR': str(self.home)})

    def wait(self):
        self.procs.wait_until_answering('placement', self.url)
