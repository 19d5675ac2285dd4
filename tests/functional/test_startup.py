"""The console scripts, started as an operator starts them, refuse a
configuration or a database they cannot work with: exit code 1 and one
line naming the fault, never a traceback, and nothing created.

Every case is a real process; they all start at once (a module fixture)
and each test reads its own result.
"""

import dataclasses
import os
import pathlib
import socket
import sqlite3
import subprocess
import sys

import pytest

import simulators
from tests import fixtures
from tests.functional import rabbitmq
from tests import secrets

pytestmark = pytest.mark.timeout(300)

BIN = pathlib.Path(sys.executable).parent

SERVICES = ('cyquota-api', 'cyquota-conductor', 'cyquota-all-in-one')
#: The commands' command lines; the agent simulator runs from the checkout.
ARGV = {'agent-sim': list(simulators.AGENT_SIM)}
BAD_MODEL = ("[quota] enforcement_model: Valid values are [flat, "
             "strict-two-level], but found 'hierarchical'")
NOT_MIGRATED = 'database not migrated: run cyquota-manage db sync'
#: A password that must never show (tests.secrets.KNOWN).
PASSWORD = 'S3cr3t-Startup'
PG = 'postgresql+psycopg://postgres:%s@127.0.0.1:%s/x'
BAD_PORT = ("[database] connection: the port of '%s' is not a number from "
            "1 to 65535")
MARIADB = 'mysql+pymysql://root:%s@127.0.0.1:3306/x?charset=nonexist'
CHARSET = ("unknown charset 'nonexist' in the database URL: PyMySQL knows "
           "none by that name (cyquota's tables are utf8mb4)")
REFUSED = ('(psycopg.OperationalError) connection failed: connection to '
           'server at "127.0.0.1", port 1 failed: Connection refused')


@dataclasses.dataclass
class Case:
    command: str
    config: str
    args: tuple = ()
    #: The one line expected on stderr, after "command: ".
    message: str = ''


def _sqlite(path):
    return '[database]\nconnection = sqlite:///%s\n' % path


def _cases(tmp, migrated, empty_server_db, busy_port):
    missing_db = tmp / 'missing' / 'cyquota.sqlite'
    missing_db.parent.mkdir()
    empty_file = tmp / 'empty.sqlite'
    sqlite3.connect(empty_file).close()
    cases = {}
    for command in SERVICES + ('cyquota-manage', 'agent-sim'):
        args = ('usage', 'show') if command == 'cyquota-manage' else ()
        cases['option:' + command] = Case(
            command, '[quota]\nenforcement_model = hierarchical\n', args,
            BAD_MODEL)
    for command in SERVICES + ('cyquota-manage',):
        args = ('usage', 'show') if command == 'cyquota-manage' else ()
        cases['db_port:' + command] = Case(
            command, '[database]\nconnection = %s\n' % (
                PG % (PASSWORD, 99999)), args,
            BAD_PORT % PG % ('***', 99999))
    cases.update({
        'db_port:abc': Case(
            'cyquota-manage', '[database]\nconnection = %s\n' % (
                PG % (PASSWORD, 'abc')), ('db', 'sync'),
            BAD_PORT % PG % ('***', 'abc')),
        'db_refused:cyquota-manage': Case(
            'cyquota-manage', '[database]\nconnection = %s\n' % (
                PG % (PASSWORD, 1)), ('db', 'sync'),
            'cannot use the database %s: %s' % (PG % ('***', 1), REFUSED)),
        'db_refused:cyquota-conductor': Case(
            'cyquota-conductor', '[database]\nconnection = %s\n' % (
                PG % (PASSWORD, 1)),
            message='cannot use the database %s: %s' % (
                PG % ('***', 1), REFUSED)),
        'charset:cyquota-manage': Case(
            'cyquota-manage', '[database]\nconnection = %s\n' % (
                MARIADB % PASSWORD), ('db', 'sync'),
            'cannot use the database %s: %s' % (MARIADB % '***', CHARSET)),
        'charset:cyquota-conductor': Case(
            'cyquota-conductor', '[database]\nconnection = %s\n' % (
                MARIADB % PASSWORD),
            message='cannot use the database %s: %s' % (
                MARIADB % '***', CHARSET)),
        'mistyped:cyquota-manage': Case(
            'cyquota-manage', '[database]\nconnection = %s\n' % (
                PG % (PASSWORD, 5432)).replace('://', '//'), ('db', 'sync'),
            "[database] connection: '%s' is not a database URL"
            % (PG % ('***', 5432)).replace('://', '//')),
        'transport_port': Case(
            'cyquota-conductor', '[DEFAULT]\ntransport_url = '
            'rabbit://guest:%s@127.0.0.1:99999/\n' % PASSWORD,
            message="[DEFAULT] transport_url: the port of "
                    "'rabbit://guest:***@127.0.0.1:99999/' is not a number "
                    "from 1 to 65535"),
        'transport_url': Case(
            'cyquota-conductor', '[DEFAULT]\ntransport_url = nosuch://x\n',
            message="[DEFAULT] transport_url: the transport 'nosuch' has no "
                    "entry point in the oslo.messaging.drivers group "
                    "(installed: fake, kafka, kombu, rabbit)"),
        'driver': Case(
            'cyquota-manage', '[database]\nconnection = '
            'postgresql+pg8000://db/cyquota\n', ('quota', 'check'),
            "[database] connection: the driver of postgresql+pg8000 is not "
            "installed (No module named 'pg8000'); cyquota installs "
            "postgresql+psycopg:// and mysql+pymysql://"),
        'connection': Case(
            'cyquota-manage', '[database]\nconnection = not-a-url\n',
            ('quota', 'check'),
            "[database] connection: 'not-a-url' is not a database URL"),
        'keystone_endpoint': Case(
            'cyquota-api', '[quota]\nlimit_source = keystone\n'
            '[oslo_limit]\nauth_type = password\n'
            'auth_url = keystone.example:5000\n',
            message="[oslo_limit] auth_url: 'keystone.example:5000' is not "
                    "a http:// or https:// URL"),
        'missing_config': Case(
            'cyquota-conductor', None,
            message='cannot read config file %s' % (tmp / 'nowhere.conf')),
        'missing_database': Case(
            'cyquota-api', _sqlite(missing_db),
            message='database file %s does not exist: run cyquota-manage '
                    'db sync' % missing_db),
        'unmigrated:cyquota-api': Case(
            'cyquota-api', _sqlite(empty_file), message=NOT_MIGRATED),
        'unmigrated:cyquota-conductor': Case(
            'cyquota-conductor', _sqlite(empty_file), message=NOT_MIGRATED),
        # The all-in-one migrates a SQLite file itself (the quick start);
        # a database server's schema is the operator's to sync.
        'unmigrated:cyquota-all-in-one': Case(
            'cyquota-all-in-one',
            '[database]\nconnection = %s\n' % empty_server_db,
            message=NOT_MIGRATED),
        'port:cyquota-api': Case(
            'cyquota-api',
            _sqlite(migrated) + '[api]\nport = %d\n' % busy_port,
            message='cannot listen on 127.0.0.1:%d: Address already in use'
                    % busy_port),
        'port:cyquota-all-in-one': Case(
            'cyquota-all-in-one', _sqlite(migrated),
            ('--port', str(busy_port)),
            'cannot listen on 127.0.0.1:%d: Address already in use'
            % busy_port),
    })
    return cases


def _start(tmp, name, case):
    config = tmp / ('%s.conf' % name.replace(':', '-'))
    if case.config is None:
        config = tmp / 'nowhere.conf'
    else:
        config.write_text(case.config)
    return subprocess.Popen(
        [*ARGV.get(case.command, [str(BIN / case.command)]),
         '--config-file', str(config), *case.args],
        cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _server_database():
    try:
        return fixtures.create_database('postgresql')
    except Exception as error:  # any driver error: server not there
        message = 'PostgreSQL is not reachable: %s' % error
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    """{case name: (case, returncode, stdout, stderr)}, all run at once."""
    tmp = tmp_path_factory.mktemp('startup')
    migrated = tmp / 'migrated.sqlite'
    fixtures.use_database('sqlite:///%s' % migrated)
    empty_server_db = _server_database()
    busy = socket.socket()
    busy.bind(('127.0.0.1', 0))
    busy.listen()
    try:
        cases = _cases(tmp, migrated, empty_server_db, busy.getsockname()[1])
        processes = {name: _start(tmp, name, case)
                     for name, case in cases.items()}
        done = {}
        for name, process in processes.items():
            try:
                out, err = process.communicate(timeout=240)
            finally:
                process.kill()
            done[name] = (cases[name], process.returncode, out, err, tmp)
    finally:
        busy.close()
        fixtures.drop_database(empty_server_db)
    return done


def _names():
    """The names of ``_cases``, for the test ids."""
    return (['option:%s' % c for c in SERVICES
             + ('cyquota-manage', 'agent-sim')]
            + ['db_port:%s' % c for c in SERVICES + ('cyquota-manage',)]
            + ['db_port:abc', 'db_refused:cyquota-manage',
               'db_refused:cyquota-conductor', 'charset:cyquota-manage',
               'charset:cyquota-conductor', 'mistyped:cyquota-manage',
               'transport_port']
            + ['transport_url', 'connection', 'keystone_endpoint',
               'missing_config', 'missing_database']
            + ['unmigrated:%s' % c for c in SERVICES]
            + ['port:cyquota-api', 'port:cyquota-all-in-one'])


@pytest.mark.parametrize('name', _names())
def test_refuses_to_start_with_one_line(results, name):
    case, returncode, out, err, tmp = results[name]
    assert 'Traceback' not in out + err
    secrets.assert_no_secret(out, err)
    assert returncode == 1, err
    assert err.strip().splitlines()[-1] == '%s: %s' % (case.command,
                                                       case.message)
    if not name.startswith('port:'):
        assert 'serving' not in out + err
    # Only the all-in-one's quick start may create a SQLite file.
    assert not (tmp / 'cyquota.sqlite').exists()
    assert not (tmp / 'missing' / 'cyquota.sqlite').exists()


def test_the_wsgi_application_refuses_an_unmigrated_database(tmp_path):
    # What uWSGI loads (devstack): it stops as the console scripts do.
    empty = tmp_path / 'empty.sqlite'
    sqlite3.connect(empty).close()
    config = tmp_path / 'cyquota.conf'
    # noauth under a WSGI server needs the operator's opt-in.
    config.write_text(_sqlite(empty)
                      + '[api]\nallow_remote_noauth = true\n')
    load = ('import sys; sys.argv = ["cyquota-api-wsgi", "--config-file", '
            'sys.argv[1]]; import cyquota.api.wsgi')
    result = subprocess.run([str(BIN / 'python'), '-c', load, str(config)],
                            cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert 'Traceback' not in result.stderr
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        'cyquota-api-wsgi: ' + NOT_MIGRATED)
    assert not (tmp_path / 'cyquota.sqlite').exists()


def test_agent_sim_without_a_conductor(rabbit_url, tmp_path):
    bus = rabbitmq.Bus(rabbit_url)
    config = tmp_path / 'cyquota.conf'
    config.write_text(bus.config('sqlite:///%s' % (tmp_path / 'unused.db')))
    try:
        result = subprocess.run(
            [*simulators.AGENT_SIM, '--config-file', str(config),
             '--timeout', '1', '--retry-for', '0', '--iterations', '4',
             '--workers', '2'],
            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    finally:
        bus.delete()
    assert 'Traceback' not in result.stdout + result.stderr
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        'agent-sim: no conductor answered on topic %s within 1 s'
        % bus.name)
    assert '| total ' in result.stdout
    assert not (tmp_path / 'unused.db').exists()
