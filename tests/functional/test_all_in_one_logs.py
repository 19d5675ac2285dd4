"""cyquota-all-in-one never writes the database password to its log."""

import socket
import subprocess
import sys
import time

import pytest
import requests
import sqlalchemy as sa

from cyquota.db import api as db_api


# PostgreSQL's trust authentication takes any password; MariaDB's root has
# none and refuses one.
@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_the_database_password_is_masked(db_url, tmp_path):
    url = sa.engine.make_url(db_url).set(password='s3cret-pw')
    assert db_api.shown_url(url) == url.render_as_string(hide_password=True)
    assert 's3cret-pw' not in db_api.shown_url(url)
    config = tmp_path / 'cyquota.conf'
    config.write_text('[database]\nconnection = %s\n'
                      % url.render_as_string(hide_password=False))
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    log = tmp_path / 'all-in-one.log'
    with open(log, 'w') as out:
        process = subprocess.Popen(
            [sys.executable, '-m', 'cyquota.cmd.all_in_one', '--config-file',
             str(config), '--port', str(port)], cwd=tmp_path, stdout=out,
            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get('http://127.0.0.1:%d/' % port, timeout=1)
                break
            except requests.ConnectionError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, 'no answer within 60 s'
                time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=30)
    text = log.read_text()
    assert 'Database %s at revision' % db_api.shown_url(url) in text
    assert 's3cret-pw' not in text
