"""``[api] auth_strategy = noauth`` serves on a loopback address only,
unless ``[api] allow_remote_noauth`` says otherwise, in every way the API
is served: cyquota-api (one process and ``--workers``), cyquota-all-in-one
and the WSGI entry point, which cannot see its address and so needs the
opt-in; each start under noauth logs a WARNING.

The refusals are real processes, all started at once; none binds an
address other than loopback.
"""

import pathlib
import subprocess
import sys
import time

import pytest
import requests

from servers import api_server
from tests import fixtures

pytestmark = pytest.mark.timeout(300)

BIN = pathlib.Path(sys.executable).parent
REFUSED = ('[api] auth_strategy = noauth trusts the X-Roles header of '
           'anyone who reaches the API: it serves on a loopback address '
           'only, not %s; use auth_strategy = keystone, or set [api] '
           'allow_remote_noauth = true to serve it there anyway')
WARNING = ('WARNING cyquota.api.noauth [-] [api] auth_strategy = noauth %s: '
           'the X-Project-Id, X-User-Id and X-Roles headers are trusted as '
           'sent')
#: What uWSGI does with ``module = cyquota.api.wsgi:application``.
LOAD_WSGI = ('import sys; sys.argv = ["cyquota-api-wsgi"] + sys.argv[1:]; '
             'import cyquota.api.wsgi')


def _refusals(tmp, migrated, port):
    """{name: (command, arguments, config text or None)} of the starts to
    refuse; the config file's option goes between the two."""
    sqlite = '[database]\nconnection = sqlite:///%s\n' % migrated
    anywhere = sqlite + '[api]\nhost = 0.0.0.0\nport = %d\n' % port
    api = [str(BIN / 'cyquota-api')]
    return {
        'cyquota-api': (api, [], anywhere),
        'cyquota-api --workers': (api, ['--workers', '2'], anywhere),
        'cyquota-api --host': (api, ['--host', '0.0.0.0'],
                               sqlite + '[api]\nport = %d\n' % port),
        # The quick start's own defaults, asked to listen everywhere.
        'cyquota-all-in-one': (
            [str(BIN / 'cyquota-all-in-one')],
            ['--host', '0.0.0.0', '--port', str(port)], None),
        'wsgi': ([str(BIN / 'python'), '-c', LOAD_WSGI], [], sqlite),
    }


@pytest.fixture(scope='module')
def refused(tmp_path_factory):
    """{name: (returncode, stderr, directory)}, all run at once."""
    tmp = tmp_path_factory.mktemp('noauth')
    migrated = tmp / 'migrated.sqlite'
    fixtures.use_database('sqlite:///%s' % migrated)
    port = api_server.free_port()
    processes = {}
    for number, (name, (command, arguments, config)) in enumerate(
            _refusals(tmp, migrated, port).items()):
        directory = tmp / str(number)
        directory.mkdir()
        if config is not None:
            (directory / 'cyquota.conf').write_text(config)
            command = command + ['--config-file',
                                 str(directory / 'cyquota.conf')]
        processes[name] = (directory, subprocess.Popen(
            command + arguments, cwd=directory, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True))
    done = {}
    deadline = time.monotonic() + 120
    for name, (directory, process) in processes.items():
        try:
            # One that serves instead never ends by itself.
            _, err = process.communicate(
                timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        done[name] = (process.returncode, err, directory)
    return done


@pytest.mark.parametrize('name', ['cyquota-api', 'cyquota-api --workers',
                                  'cyquota-api --host', 'cyquota-all-in-one',
                                  'wsgi'])
def test_noauth_is_refused_beyond_loopback(refused, name):
    returncode, err, directory = refused[name]
    assert 'Traceback' not in err
    assert returncode == 1, err
    prog = 'cyquota-api-wsgi' if name == 'wsgi' else name.split()[0]
    where = 'under a WSGI server' if name == 'wsgi' else 'on 0.0.0.0'
    assert err.strip().splitlines()[-1] == '%s: %s' % (prog, REFUSED % where)
    assert 'serving' not in err
    # Refused before the quick start makes its database.
    assert not (directory / 'cyquota.sqlite').exists()


def test_noauth_on_loopback_serves_with_a_warning(tmp_path, sqlite_db):
    with api_server.ApiServer(sqlite_db, directory=tmp_path) as server:
        assert requests.get(server.url + '/', timeout=30).status_code == 200
        assert WARNING % 'on 127.0.0.1' in server.log()


def test_the_quick_start_serves_noauth_on_loopback(tmp_path):
    """``make run``: no config file, no opt-in."""
    port = api_server.free_port()
    log = tmp_path / 'all-in-one.log'
    with open(log, 'w') as out:
        process = subprocess.Popen(
            [str(BIN / 'cyquota-all-in-one'), '--port', str(port)],
            cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
    try:
        api_server.wait_until_serving('http://127.0.0.1:%d' % port, process)
        usage = requests.get('http://127.0.0.1:%d/v1/quota_usages/p1' % port,
                             headers={'X-Roles': 'admin'}, timeout=30)
        assert usage.status_code == 200, usage.text
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert WARNING % 'on 127.0.0.1' in log.read_text()


def test_the_wsgi_entry_point_serves_noauth_with_the_opt_in(tmp_path,
                                                            sqlite_db):
    config = tmp_path / 'cyquota.conf'
    log = tmp_path / 'wsgi.log'
    config.write_text('[DEFAULT]\nlog_file = %s\n[database]\nconnection = '
                      '%s\n[api]\nallow_remote_noauth = true\n'
                      % (log, sqlite_db))
    script = LOAD_WSGI + (
        '; import webtest; print(webtest.TestApp(cyquota.api.wsgi.'
        'application).get("/v1/quota_usages/p1", headers={"X-Roles": '
        '"admin"}).status_int)')
    done = subprocess.run([str(BIN / 'python'), '-c', script,
                           '--config-file', str(config)],
                          cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ['200']
    assert WARNING % 'under a WSGI server' in log.read_text()
