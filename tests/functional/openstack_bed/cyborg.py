"""The bed's Cyborg: cyborg-api (its WSGI application: the console script
does not start with the threading backend of oslo.service 4.8), the
conductor, and one agent per compute host on the fake accelerator driver
(16 FPGAs with trait CUSTOM_FAKE_DEVICE under the host's provider).

With ``cyquota_filter`` the API pipeline holds cyquota's bind filter
after ``authtoken``, configured by ``[cyquota_filter]`` of cyborg.conf, and
the checkout's ``cyquota`` package is importable in Cyborg's processes.
"""

import configparser
import pathlib

from tests.functional import cached_venv
from tests.functional.openstack_bed import config_files
from tests.functional.openstack_bed import identity

_SERVE = cached_venv.serve_script(
    'from cyborg.wsgi.api import application')
#: The repository root of the running tests, whose cyquota the filter is.
CHECKOUT = pathlib.Path(__file__).resolve().parents[3]
FILTER = 'cyquota_bind'
FILTER_FACTORY = 'cyquota.cyborg.bind_filter:filter_factory'


class Cyborg:
    """Cyborg's configuration in ``home``/cyborg and its processes.

    :param cyquota_url: cyquota's API, for the filter (None: no filter).
    :param extra: more ``{section: {option: value}}`` for cyborg.conf.
    """

    def __init__(self, home, procs, venv, port, keystone_url, database,
                 transport_url, cyquota_url=None, extra=None):
        self.home = home / 'cyborg'
        self.home.mkdir()
        self.procs = procs
        self.venv = venv
        self.port = port
        self.url = 'http://127.0.0.1:%d/v2' % port
        self.keystone_url = keystone_url
        self.database = database
        self.transport_url = transport_url
        self.cyquota_url = cyquota_url
        self.extra = extra or {}
        self.paste = self._write_paste()
        self.config = self._write_config(self.home / 'cyborg.conf', {})
        self.env = {}
        if cyquota_url:
            # Only the cyquota package, not the checkout's tests.
            path = self.home / 'python'
            path.mkdir()
            (path / 'cyquota').symlink_to(CHECKOUT / 'cyquota')
            self.env['PYTHONPATH'] = str(path)

    def _write_paste(self):
        """Cyborg's own api-paste.ini, with the filter when asked."""
        paste = configparser.ConfigParser(interpolation=None)
        paste.optionxform = str
        paste.read(self.venv / 'etc' / 'cyborg' / 'api-paste.ini')
        if self.cyquota_url:
            stages = paste['pipeline:main']['pipeline'].split()
            stages.insert(stages.index('authtoken') + 1, FILTER)
            paste['pipeline:main']['pipeline'] = ' '.join(stages)
            paste['filter:' + FILTER] = {
                'paste.filter_factory': FILTER_FACTORY}
        path = self.home / 'api-paste.ini'
        with open(path, 'w') as out:
            paste.write(out)
        return path

    def _write_config(self, path, more):
        auth = identity.password_options(self.keystone_url, 'cyborg')
        sections = {
            'DEFAULT': {'transport_url': self.transport_url},
            'database': {'connection': self.database},
            'api': {'api_paste_config': self.paste},
            'keystone_authtoken': identity.authtoken_options(
                self.keystone_url, 'cyborg'),
            'placement': dict(auth, region_name=identity.REGION),
            'nova': dict(auth, region_name=identity.REGION),
            'agent': {'enabled_drivers': 'fake_driver'},
        }
        if self.cyquota_url:
            sections['cyquota_filter'] = dict(
                identity.password_options(self.keystone_url, 'cyquota'),
                endpoint_override=self.cyquota_url)
        return config_files.write(path, sections, more, self.extra)

    def sync_database(self):
        self.procs.run('cyborg-dbsync', [
            self.venv / 'bin' / 'cyborg-dbsync', '--config-file',
            self.config, 'upgrade'])

    def start_controllers(self):
        """cyborg-api and cyborg-conductor."""
        serve = self.home / 'serve.py'
        serve.write_text(_SERVE)
        self.procs.start('cyborg-api', [
            self.venv / 'bin' / 'python', serve, self.port,
            '--config-file', self.config], env=self.env)
        self.procs.start('cyborg-conductor', [
            self.venv / 'bin' / 'cyborg-conductor', '--config-file',
            self.config], env=self.env)

    def wait_for_api(self):
        self.procs.wait_until_answering('cyborg-api', self.url)

    def start_agent(self, host):
        """cyborg-agent of compute ``host``: its fake device goes under
        the provider of that name, which must exist already."""
        config = self._write_config(self.home / ('agent-%s.conf' % host), {
            'DEFAULT': {'host': host},
            'agent': {'resource_provider_name': host}})
        self.procs.start('cyborg-agent-' + host, [
            self.venv / 'bin' / 'cyborg-agent', '--config-file', config],
            env=self.env)
