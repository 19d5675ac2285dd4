"""The conductor as a service and the commands, on the embedded in-process
transport: periodic expiry, cyquota-conductor and the agent simulator."""

import json
import signal
import subprocess
import sys
import time

import oslo_messaging
import pytest
import sqlalchemy as sa

from cyquota.conductor import rpc
from cyquota.conductor import rpcapi
from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import quota
import simulators


def _reservation_rows():
    table = models.Reservation.__table__
    with db_api.get_engine().connect() as conn:
        return [tuple(row) for row in conn.execute(
            sa.select(table.c.uuid, table.c.status))]


def run_conductor_until(done, timeout=30):
    """Run a conductor (its periodic tasks) until ``done()`` or
    ``timeout`` seconds."""
    conductor = conductor_service.ConductorService(host='unit-conductor')
    conductor.start()
    try:
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        conductor.stop()
        conductor.wait()
        rpc.reset()


def test_without_a_conductor_a_call_times_out(sqlite_db, ctx):
    CONF.set_override('topic', 'nobody-listens', 'conductor')
    try:
        with pytest.raises(oslo_messaging.MessagingTimeout):
            rpcapi.ConductorAPI(timeout=0.3).get_usage(ctx, 'p1')
    finally:
        rpc.reset()
        CONF.clear_override('topic', 'conductor')


def test_periodic_expiry(sqlite_db, ctx):
    CONF.set_override('expire_interval', 1, 'conductor')
    uuids = quota.QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}, expire=1)
    try:
        run_conductor_until(lambda: not quota.QUOTAS.get_project_usage(
            ctx, 'p1')['FPGA']['reserved'])
    finally:
        CONF.clear_override('expire_interval', 'conductor')
    assert _reservation_rows() == [(uuids[0], 'expired')]


def test_periodic_purge(sqlite_db, ctx):
    CONF.set_override('reservation_retention', 0, 'quota')
    CONF.set_override('purge_interval', 1, 'conductor')
    quota.QUOTAS.commit(ctx, 'p1', quota.QUOTAS.reserve(ctx, 'p1',
                                                        {'FPGA': 1}))
    try:
        run_conductor_until(lambda: not _reservation_rows())
    finally:
        CONF.clear_override('purge_interval', 'conductor')
    assert _reservation_rows() == []
    assert quota.QUOTAS.get_project_usage(ctx, 'p1')['FPGA']['used'] == 1


def test_conductor_command_stops_cleanly_on_sigterm(sqlite_db, tmp_path):
    config = tmp_path / 'cyquota.conf'
    config.write_text('[database]\nconnection = %s\n' % sqlite_db)
    process = subprocess.Popen(
        [sys.executable, '-m', 'cyquota.cmd.conductor', '--config-file',
         str(config)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        lines = []
        for line in process.stdout:
            lines.append(line)
            if 'serving topic cyquota-conductor' in line:
                break
        # The embedded default transport: nothing outside can reach it.
        assert 'only this process can reach this conductor' in ''.join(lines)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        process.wait()


def test_agent_sim_command_embedded(tmp_path):
    config = tmp_path / 'cyquota.conf'
    config.write_text('[database]\nconnection = sqlite:///%s\n'
                      '[quota]\ndefault_limit = 3\n'
                      % (tmp_path / 'sim.sqlite'))
    out = tmp_path / 'summary.json'
    result = subprocess.run(
        [*simulators.AGENT_SIM, '--config-file', str(config),
         '--iterations', '20', '--workers', '1', '--seed', '3',
         '--summary-json', str(out)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert 'progress: 20/20 iterations (100%)' in result.stderr
    summary = json.loads(out.read_text())
    assert summary['iterations'] == 20
    counts = summary['projects'].values()
    assert sum(p['held'] for p in counts) == 0
    assert (sum(p['released'] for p in counts)
            == sum(p['committed'] for p in counts) > 0)
    assert '| total ' in result.stdout
