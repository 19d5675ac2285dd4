"""cyquota-all-in-one never writes the database password to its log."""

import subprocess
import sys

import pytest
import sqlalchemy as sa

from cyquota.db import api as db_api
from servers import api_server


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
    port = api_server.free_port()
    log = tmp_path / 'all-in-one.log'
    with open(log, 'w') as out:
        process = subprocess.Popen(
            [sys.executable, '-m', 'cyquota.cmd.all_in_one', '--config-file',
             str(config), '--port', str(port)], cwd=tmp_path, stdout=out,
            stderr=subprocess.STDOUT)
    try:
        api_server.wait_until_serving('http://127.0.0.1:%d' % port, process)
    finally:
        process.terminate()
        process.wait(timeout=30)
    text = log.read_text()
    assert 'Database %s at revision' % db_api.shown_url(url) in text
    assert 's3cret-pw' not in text
