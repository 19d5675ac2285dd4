"""Private PostgreSQL and MariaDB servers that a test may stop and restart.

The shared servers on 5432 and 3306 serve every test run on the machine and
must never be disturbed; a fault test that restarts its database gets a
server of its own instead: a fresh data directory (``initdb`` /
``mariadb-install-db``) and a free port on 127.0.0.1, started once a
session and removed at its end. When the server programs are missing the
tests fail under CI (``CI=true``) and are skipped elsewhere.
"""

import abc
import os
import pathlib
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest
import sqlalchemy as sa

from servers import databases

from servers import api_server

PG_BIN = pathlib.Path(os.environ.get('CYQUOTA_TEST_PG_BIN',
                                     '/usr/lib/postgresql/15/bin'))
#: Seconds a server gets to start or to stop.
_START_TIMEOUT = 60


def unavailable(message):
    """Fail under CI, skip elsewhere."""
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


class PrivateServer(abc.ABC):
    """A database server process of this test session's own.

    ``stop()`` and ``start()`` are a real shutdown and start of the same
    data directory, so its databases and their rows survive them.
    """

    backend = None  # 'postgresql' or 'mysql'

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.port = api_server.free_port()
        self.log_file = self.directory / 'server.log'

    @property
    @abc.abstractmethod
    def server_url(self):
        """The URL of the server, without a database name."""

    @abc.abstractmethod
    def initialise(self):
        """Create the data directory."""

    @abc.abstractmethod
    def start(self):
        """Start the server; return once it accepts connections."""

    @abc.abstractmethod
    def stop(self):
        """Shut the server down (its clients lose their connections)."""

    def _admin_engine(self):
        return sa.create_engine(
            self.server_url + ('/postgres' if self.backend == 'postgresql'
                               else '/'),
            isolation_level='AUTOCOMMIT', poolclass=sa.pool.NullPool)

    def wait_until_accepting(self):
        deadline = time.monotonic() + _START_TIMEOUT
        engine = self._admin_engine()
        while True:
            try:
                with engine.connect() as conn:
                    conn.exec_driver_sql('SELECT 1')
                return
            except sa.exc.DBAPIError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def create_database(self):
        """A new empty database on this server; returns its URL."""
        name = 'cyq_%s' % uuid.uuid4().hex[:12]
        engine = self._admin_engine()
        with engine.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
        url = '%s/%s' % (self.server_url, name)
        return url + '?charset=utf8mb4' if self.backend == 'mysql' else url


class PrivatePostgres(PrivateServer):
    """PostgreSQL 15 (``initdb`` + ``pg_ctl``), as user postgres when the
    tests run as root (PostgreSQL refuses to run as root)."""

    backend = 'postgresql'

    @property
    def server_url(self):
        return 'postgresql+psycopg://postgres@127.0.0.1:%d' % self.port

    def _run(self, *command):
        if os.geteuid() == 0:
            command = ('runuser', '-u', 'postgres', '--') + command
        subprocess.run(command, check=True, capture_output=True,
                       timeout=_START_TIMEOUT)

    def initialise(self):
        if not (PG_BIN / 'initdb').exists():
            unavailable('PostgreSQL programs not found in %s' % PG_BIN)
        if os.geteuid() == 0:
            postgres = pwd.getpwnam('postgres')
            os.chown(self.directory, postgres.pw_uid, postgres.pw_gid)
        self._run(str(PG_BIN / 'initdb'), '-D', str(self.directory / 'data'),
                  '-A', 'trust', '-U', 'postgres', '--no-sync')

    def start(self):
        options = ('-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off'
                   % (self.port, self.directory))
        self._run(str(PG_BIN / 'pg_ctl'), '-D', str(self.directory / 'data'),
                  '-o', options, '-l', str(self.log_file), '-w', 'start')
        self.wait_until_accepting()

    def stop(self):
        self._run(str(PG_BIN / 'pg_ctl'), '-D', str(self.directory / 'data'),
                  '-m', 'fast', '-w', 'stop')


class PrivateMariaDB(PrivateServer):
    """MariaDB (``mariadb-install-db`` + ``mariadbd``), root without a
    password, small buffers."""

    backend = 'mysql'

    def __init__(self, directory):
        super().__init__(directory)
        self.process = None

    @property
    def server_url(self):
        return 'mysql+pymysql://root@127.0.0.1:%d' % self.port

    def initialise(self):
        if not shutil.which('mariadb-install-db') or not shutil.which(
                'mariadbd'):
            unavailable('MariaDB programs (mariadb-install-db, mariadbd) '
                        'not found')
        subprocess.run(
            ['mariadb-install-db', '--no-defaults',
             '--datadir=%s' % (self.directory / 'data'),
             '--user=%s' % pwd.getpwuid(os.geteuid()).pw_name,
             '--auth-root-authentication-method=normal', '--skip-test-db'],
            check=True, capture_output=True, timeout=_START_TIMEOUT)

    def start(self):
        log = open(self.log_file, 'ab')
        self.process = subprocess.Popen(
            ['mariadbd', '--no-defaults',
             '--datadir=%s' % (self.directory / 'data'),
             '--user=%s' % pwd.getpwuid(os.geteuid()).pw_name,
             '--port=%d' % self.port, '--bind-address=127.0.0.1',
             '--socket=%s' % (self.directory / 'mysql.sock'),
             '--pid-file=%s' % (self.directory / 'mysql.pid'),
             '--skip-log-bin', '--innodb-buffer-pool-size=32M',
             '--innodb-log-file-size=16M',
             '--innodb-flush-log-at-trx-commit=2',
             '--character-set-server=utf8mb4'],
            stdout=log, stderr=log)
        log.close()
        self.wait_until_accepting()

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=_START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_SERVERS = {'postgresql': PrivatePostgres, 'mysql': PrivateMariaDB}


@pytest.fixture(scope='session', params=sorted(_SERVERS))
def private_server(request):
    """A running private server of each kind, started once a session."""
    # Not under pytest's temporary directory, which only root may enter
    # when the tests run as root: the postgres user must reach its data.
    directory = tempfile.mkdtemp(prefix='cyquota-%s-' % request.param)
    server = _SERVERS[request.param](directory)
    server.initialise()
    server.start()
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def private_db(private_server):
    """cyquota pointed at a new migrated database on ``private_server``;
    returns its URL."""
    url = private_server.create_database()
    databases.use_database(url)
    return url
