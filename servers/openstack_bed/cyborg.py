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

from servers import cached_venv
from servers.openstack_bed import config_files
from servers.openstack_bed import identity

_SERVE = cached_venv.serve_script(
    'from cyborg.wsgi.api import application')
#: The repository root of the running tests, whose cyquota the filter is.
CHECKOUT = pathlib.Path(__file__).resolve().parents[2]
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
        self.paste = self._write_paste(bool(cyquota_url))
        self.config = self._write_config(self.home / 'cyborg.conf', {})
        self.env = {}
        if cyquota_url:
            # Only the cyquota package, not the checkout's tests.
            path = self.home / 'python'
            path.mkdir()
            (path / 'cyquota').symlink_to(CHECKOUT / 'cyquota')
            self.env['PYTHONPATH'] = str(path)

    def _write_paste(self, cyquota_filter):
        """Cyborg's own api-paste.ini, with the filter when asked."""
        paste = configparser.ConfigParser(interpolation=None)
        paste.optionxform = str
        paste.read(self.venv / 'etc' / 'cyborg' / 'api-paste.ini')
        if cyquota_filter:
            stages = paste['pipeline:main']['pipeline'].split()
            stages.insert(stages.index('authtoken') + 1, FILTER)
            paste['pipeline:main']['pipeline'] = ' '.join(stages)
            paste['filter:' + FILTER] = {
                'paste.filter_factory': FILTER_FACTORY}
        path = self.home / ('api-paste.ini' if cyquota_filter
                            else 'api-paste-plain.ini')
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
        self.start_api()
        self.procs.start('cyborg-conductor', [
            self.venv / 'bin' / 'cyborg-conductor', '--config-file',
            self.config], env=self.env)

    def start_api(self, name='cyborg-api', port=None, cyquota_filter=True):
        """cyborg-api as process ``name`` on ``port`` (default: the
        bed's), on the same database and conductor; with
        ``cyquota_filter=False`` without cyquota's filter even on a bed
        that has it (the benchmarks compare the two). Returns its URL."""
        config = self.config
        if self.cyquota_url and not cyquota_filter:
            config = self._write_config(self.home / 'cyborg-plain.conf', {
                'api': {'api_paste_config': self._write_paste(False)}})
        serve = self.home / 'serve.py'
        serve.write_text(_SERVE)
        port = port or self.port
        self.procs.start(name, [
            self.venv / 'bin' / 'python', serve, port,
            '--config-file', config], env=self.env)
        return 'http://127.0.0.1:%d/v2' % port

    def wait_for_api(self, name='cyborg-api', url=None):
        self.procs.wait_until_answering(name, url or self.url)

    def start_agent(self, host):
        """cyborg-agent of compute ``host``: its fake device goes under
        the provider of that name, which must exist already."""
        config = self._write_config(self.home / ('agent-%s.conf' % host), {
            'DEFAULT': {'host': host},
            'agent': {'resource_provider_name': host}})
        self.procs.start('cyborg-agent-' + host, [
            self.venv / 'bin' / 'cyborg-agent', '--config-file', config],
            env=self.env)
