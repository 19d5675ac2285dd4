"""The real servers that the benchmarks and the functional tests run on:
throw-away databases on PostgreSQL and MariaDB, and a ``cyquota-api``
process.

It lives here, outside the shipped ``cyquota`` package, so that the
benchmarks import nothing from ``tests``; the tests import it through
``tests.fixtures`` and ``tests.functional.api_server``.
"""

import configparser
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import requests
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import migration
from cyquota import quota

PG_SERVER = os.environ.get('CYQUOTA_TEST_PG_URL',
                           'postgresql+psycopg://postgres@127.0.0.1:5432')
MYSQL_SERVER = os.environ.get('CYQUOTA_TEST_MYSQL_URL',
                              'mysql+pymysql://root@127.0.0.1:3306')
SERVERS = {'postgresql': PG_SERVER, 'mysql': MYSQL_SERVER}
BIN = pathlib.Path(sys.executable).parent


# -- databases ---------------------------------------------------------------

def use_database(url, migrate=True):
    """Make ``url`` cyquota's database (and migrate it) in this process."""
    CONF.set_override('connection', url, 'database')
    db_api.reset()
    quota.QUOTAS.reset()
    if migrate:
        migration.upgrade()


def database_url(backend, name):
    """The URL of database ``name`` on the ``backend`` server."""
    url = '%s/%s' % (SERVERS[backend], name)
    return url + '?charset=utf8mb4' if backend == 'mysql' else url


def _server_engine(backend):
    return sa.create_engine(SERVERS[backend] + (
        '/postgres' if backend == 'postgresql' else '/'),
        isolation_level='AUTOCOMMIT')


def create_database(backend):
    """Create an empty database on a real server; returns its URL.

    Raises the driver's error when the server cannot be reached.
    """
    name = 'cyq_%s' % uuid.uuid4().hex[:12]
    engine = _server_engine(backend)
    with engine.connect() as conn:
        extra = ' CHARACTER SET utf8mb4' if backend == 'mysql' else ''
        conn.exec_driver_sql('CREATE DATABASE %s%s' % (name, extra))
    engine.dispose()
    return database_url(backend, name)


def drop_database(url):
    """Drop the database of ``url``, connections to it and all."""
    backend = 'mysql' if url.startswith('mysql') else 'postgresql'
    name = sa.engine.make_url(url).database
    engine = _server_engine(backend)
    with engine.connect() as conn:
        if backend == 'postgresql':
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name)
        else:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
    engine.dispose()


# -- the API server ----------------------------------------------------------

def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def wait_until_serving(url, process, timeout=60):
    """Return once ``GET {url}/`` answers; RuntimeError when ``process``
    exits first or nothing answers within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError('the service exited with %d'
                               % process.returncode)
        try:
            if requests.get(url + '/', timeout=2).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError('nothing answered on %s within %d s' % (url, timeout))


class ApiServer:
    """``cyquota-api --config-file <its own>`` on 127.0.0.1: a
    configuration file of its own, a free port, its log in a file; started
    and stopped as an operator would.

    :param options: ``{section: {option: value}}`` written to the file, on
        top of a port, a log file and ``[database] connection``.
    """

    def __init__(self, database_url, options=None, directory=None):
        self.directory = pathlib.Path(directory or tempfile.mkdtemp(
            prefix='cyquota-api-'))
        self.port = free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.log_file = self.directory / 'cyquota-api.log'
        self.config_file = self.directory / 'cyquota.conf'
        config = configparser.ConfigParser(interpolation=None)
        config.read_dict({
            'DEFAULT': {'log_file': str(self.log_file)},
            'database': {'connection': database_url},
            'api': {'host': '127.0.0.1', 'port': str(self.port)},
        })
        config.read_dict(options or {})
        with open(self.config_file, 'w') as out:
            config.write(out)
        self.process = None

    def manage(self, *args):
        """Run ``cyquota-manage`` on the same configuration."""
        return subprocess.run(
            [str(BIN / 'cyquota-manage'), '--config-file',
             str(self.config_file)] + list(args),
            check=True, capture_output=True, text=True, timeout=120)

    def start(self, timeout=60, arguments=()):
        """Start the process (with more command-line ``arguments``); return
        once ``GET /`` answers."""
        self.process = subprocess.Popen(
            [str(BIN / 'cyquota-api'), '--config-file',
             str(self.config_file)] + list(arguments),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONWARNINGS='ignore'))
        try:
            wait_until_serving(self.url, self.process, timeout)
        except RuntimeError as error:
            self.stop()
            raise RuntimeError('cyquota-api: %s: %s' % (
                error, self.process.stderr.read()
                .decode(errors='replace')[-3000:]))
        return self

    def stop(self, timeout=30):
        """SIGTERM, then wait; returns the exit status."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def log(self):
        """What the process logged so far."""
        return self.log_file.read_text() if self.log_file.exists() else ''

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
