"""A three-node MariaDB Galera cluster on loopback, for functional tests.

``galera_cluster`` (session-scoped) gives each node a data directory of its
own (``mariadb-install-db`` once, copied), free ports for its clients, its
group communication (``gmcast.listen_addr``), IST and SST (rsync), and a
configuration file that names nothing outside them, so the shared MariaDB
on 3306 is never touched. The first node bootstraps the cluster
(``--wsrep-new-cluster``), the others join one after the other (each
receives a full state transfer by rsync); the fixture returns once
``wsrep_cluster_size`` is 3 and every node is Synced, and stops every node at
the end. Without galera-4, mariadbd or rsync the tests fail under CI
(CI=true) and are skipped elsewhere.
"""

import dataclasses
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

import pymysql
import pytest

from servers.api_server import free_port

PROVIDER = '/usr/lib/galera/libgalera_smm.so'
NODES = 3
START_TIMEOUT = 90  # seconds for the whole cluster, on a busy machine
STOP_TIMEOUT = 30
_REQUIRED = ('mariadbd', 'mariadb-install-db', 'rsync')
# Run as root, rsync's SST daemon would write as ``nobody``: the nodes run
# as the packaged ``mysql`` user instead, as in production.
_SERVER_USER = 'mysql' if os.getuid() == 0 else None

_CONFIG = """\
[mysqld]
datadir = {datadir}
socket = {directory}/mysqld.sock
pid-file = {directory}/mysqld.pid
log-error = {directory}/error.log
port = {port}
bind-address = 127.0.0.1
skip-name-resolve
performance_schema = OFF
innodb_buffer_pool_size = 32M
innodb_log_file_size = 16M
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
# Galera's own advice: durability comes from the other nodes, not fsync.
innodb_flush_log_at_trx_commit = 2
wsrep_on = ON
wsrep_provider = {provider}
wsrep_cluster_name = {cluster_name}
wsrep_cluster_address = gcomm://{peers}
wsrep_node_name = node{number}
wsrep_node_address = 127.0.0.1:{gmcast_port}
wsrep_provider_options = "gmcast.listen_addr=tcp://127.0.0.1:{gmcast_port}; \
ist.recv_addr=127.0.0.1:{ist_port}; gcache.size=32M; \
evs.suspect_timeout=PT30S; evs.inactive_timeout=PT60S"
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:{sst_port}
"""


def _binary(name):
    return shutil.which(name) or shutil.which(name, path='/usr/sbin')


def missing_parts():
    """What this machine lacks to run a Galera cluster (empty if none)."""
    missing = [name for name in _REQUIRED if _binary(name) is None]
    if not os.path.exists(PROVIDER):
        missing.append(PROVIDER)
    return missing


@dataclasses.dataclass
class Node:
    """One mariadbd of the cluster, its directory and ports."""

    number: int
    directory: pathlib.Path
    port: int
    gmcast_port: int
    ist_port: int
    sst_port: int
    process: subprocess.Popen = None

    @property
    def datadir(self):
        return self.directory / 'data'

    @property
    def config(self):
        return self.directory / 'my.cnf'

    def server_url(self):
        """The SQLAlchemy URL of this node's server (no database)."""
        return 'mysql+pymysql://root@127.0.0.1:%d' % self.port

    def connect(self, **kwargs):
        """A pymysql connection to this node as root."""
        return pymysql.connect(host='127.0.0.1', port=self.port, user='root',
                               connect_timeout=5, autocommit=True, **kwargs)

    def status(self, name):
        """A ``SHOW STATUS`` value (``wsrep_...``) of this node."""
        with self.connect() as conn, conn.cursor() as cursor:
            cursor.execute('SHOW STATUS LIKE %s', (name,))
            row = cursor.fetchone()
            return row[1] if row else None

    def start(self, bootstrap=False):
        args = [_binary('mariadbd'), '--defaults-file=%s' % self.config]
        if _SERVER_USER:
            args.append('--user=%s' % _SERVER_USER)
        if bootstrap:
            args.append('--wsrep-new-cluster')
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)

    def wait_synced(self, cluster_size, deadline):
        """Wait until this node is Synced in a cluster of ``cluster_size``
        nodes; RuntimeError with its log's tail otherwise."""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('galera node%d exited with %d:\n%s' % (
                    self.number, self.process.returncode, self.log_tail()))
            try:
                if (self.status('wsrep_local_state_comment') == 'Synced'
                        and int(self.status('wsrep_cluster_size') or 0)
                        == cluster_size):
                    return
            except pymysql.err.OperationalError:
                pass  # not accepting clients yet
            time.sleep(0.2)
        raise RuntimeError('galera node%d not Synced in a cluster of %d:\n%s'
                           % (self.number, cluster_size, self.log_tail()))

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines=30):
        log = self.directory / 'error.log'
        if not log.exists():
            return '(no log)'
        return '\n'.join(log.read_text(errors='replace').splitlines()[-lines:])


class GaleraCluster:
    """Three nodes on loopback, bootstrapped and joined in turn."""

    def __init__(self):
        # Not under pytest's temporary directory, which only its owner may
        # enter.
        self.directory = pathlib.Path(tempfile.mkdtemp(
            prefix='cyquota-galera-'))
        self.nodes = [Node(number, self.directory / ('node%d' % number),
                           free_port(), free_port(), free_port(), free_port())
                      for number in range(1, NODES + 1)]

    def _write_configs(self):
        peers = ','.join('127.0.0.1:%d' % n.gmcast_port for n in self.nodes)
        for node in self.nodes:
            node.directory.mkdir()
            node.config.write_text(_CONFIG.format(
                datadir=node.datadir, directory=node.directory,
                port=node.port, provider=PROVIDER,
                cluster_name='cyquota-test-%d' % os.getpid(), peers=peers,
                number=node.number, gmcast_port=node.gmcast_port,
                ist_port=node.ist_port, sst_port=node.sst_port))

    def _install(self):
        # One system database for all: a joiner's is replaced by its state
        # transfer anyway.
        first = self.nodes[0]
        args = [_binary('mariadb-install-db'),
                '--defaults-file=%s' % first.config,
                '--auth-root-authentication-method=normal',
                '--skip-test-db']
        if _SERVER_USER:
            args.append('--user=%s' % _SERVER_USER)
        subprocess.run(args, check=True, capture_output=True, timeout=120)
        for node in self.nodes[1:]:
            shutil.copytree(first.datadir, node.datadir)
        self._give_to_server_user()

    def _give_to_server_user(self):
        if _SERVER_USER:
            for path in [self.directory, *self.directory.rglob('*')]:
                shutil.chown(path, _SERVER_USER, _SERVER_USER)

    def start(self):
        self._write_configs()
        self._give_to_server_user()
        self._install()
        deadline = time.monotonic() + START_TIMEOUT
        for size, node in enumerate(self.nodes, 1):
            node.start(bootstrap=size == 1)
            node.wait_synced(size, deadline)
            if size == 1:
                # The installed root is root@localhost, and clients come
                # over TCP with names unresolved: the grant replicates.
                with node.connect(unix_socket=str(
                        node.directory / 'mysqld.sock')) as conn:
                    with conn.cursor() as cursor:
                        cursor.execute("CREATE USER IF NOT EXISTS "
                                       "'root'@'127.0.0.1'")
                        cursor.execute("GRANT ALL ON *.* TO "
                                       "'root'@'127.0.0.1' WITH GRANT OPTION")
        for node in self.nodes:
            node.wait_synced(NODES, deadline)

    def stop(self):
        # Joiners first: the last node to leave keeps the cluster's state.
        for node in reversed(self.nodes):
            node.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def create_database(self):
        """A new, empty database (replicated to every node); the name."""
        name = 'cyq_galera_%d' % time.monotonic_ns()
        with self.nodes[0].connect() as conn, conn.cursor() as cursor:
            cursor.execute('CREATE DATABASE %s CHARACTER SET utf8mb4' % name)
        return name

    def database_urls(self, name):
        """The URL of database ``name`` on each node, in node order."""
        return ['%s/%s' % (node.server_url(), name) for node in self.nodes]


@pytest.fixture(scope='session')
def galera_cluster():
    """A running three-node Galera cluster; stopped after the session."""
    missing = missing_parts()
    if missing:
        message = 'Galera cluster needs %s' % ', '.join(missing)
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    cluster = GaleraCluster()
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    yield cluster
    cluster.stop()
