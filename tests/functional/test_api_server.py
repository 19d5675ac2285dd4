"""cyquota-api as a real process: started from its console script with a
configuration file, talked to over HTTP with requests, stopped by SIGTERM;
on the embedded SQLite file and on the real PostgreSQL and MariaDB, with
concurrent requests racing for the last units of a limit; and, in
process on PostgreSQL, how many statements the agent's and admin's reads
take."""

import concurrent.futures
import datetime

import pytest
import requests
from sqlalchemy import event
import webtest

from cyquota.api import app
from cyquota.db import api as db_api
from cyquota.placement import inventories
from cyquota.placement import providers
from servers import api_server
from tests import commands

ADMIN = {'X-Project-Id': 'admin-project', 'X-User-Id': 'admin',
         'X-Roles': 'admin'}
SERVICE = {'X-Project-Id': 'service-project', 'X-User-Id': 'cyborg',
           'X-Roles': 'service'}
MEMBER = {'X-Project-Id': 'p1', 'X-User-Id': 'alice', 'X-Roles': 'member'}


@pytest.fixture
def sqlite_server(tmp_path):
    server = api_server.ApiServer(
        'sqlite:///%s' % (tmp_path / 'cyquota.sqlite'), directory=tmp_path)
    commands.manage(server.config_file, 'db', 'sync').check_returncode()
    yield server
    server.stop()


@pytest.fixture
def server(tmp_path, db_url):
    """On the ``backend`` fixture's PostgreSQL or MariaDB database."""
    server = api_server.ApiServer(db_url, directory=tmp_path)
    yield server
    server.stop()


def _walkthrough(server):
    """The Cyborg spec's example over HTTP, each persona and error form."""
    url = server.url
    with requests.Session() as http:
        root = http.get(url + '/')
        assert root.json()['versions'][0]['links'][0]['href'] == (
            url + '/v1/')
        assert root.headers['X-Openstack-Request-Id'].startswith('req-')
        # No version asked: the default one, said in the answer.
        assert (root.headers['OpenStack-API-Version'],
                root.headers['Vary']) == ('accelerator-quota 1.8',
                                          'OpenStack-API-Version')
        refused = http.get(url + '/', headers={
            'OpenStack-API-Version': 'accelerator-quota 9.0'})
        assert (refused.status_code, refused.json()['errors'][0]['code']) \
            == (406, 'cyquota.unsupported_version')
        http.put(url + '/v1/registered_limits/FPGA',
                 json={'default_limit': 5}, headers=ADMIN).raise_for_status()
        made = http.post(url + '/v1/reservations', headers=SERVICE, json={
            'project_id': 'p1', 'deltas': {'FPGA': 3},
            'request_id': 'attach-1', 'consumer_id': 'vm-1'})
        assert made.status_code == 201, made.text
        commit = http.post(url + '/v1/reservations/commit', headers=SERVICE,
                           json={'project_id': 'p1',
                                 'reservations': made.json()['reservations']})
        assert commit.status_code == 204 and commit.content == b''
        listed = http.get(url + '/v1/reservations?project_id=p1',
                          headers=ADMIN).json()['reservations']
        assert [(r['status'], r['expire']) for r in listed] == [
            ('committed', made.json()['expire'])]
        assert http.post(url + '/v1/reservations', headers=SERVICE, json={
            'project_id': 'p1', 'deltas': {'FPGA': 2}}).status_code == 201

        usage = http.get(url + '/v1/quota_usages/p1', headers=MEMBER)
        assert usage.json()['quota_usage']['resources']['FPGA'] == {
            'used': 3, 'reserved': 2, 'limit': 5, 'leased': 0,
            'promised': 0, 'available': 0}

        over = http.post(url + '/v1/reservations', headers=SERVICE, json={
            'project_id': 'p1', 'deltas': {'FPGA': 1}})
        assert over.status_code == 403
        assert over.json()['errors'][0]['overs'] == [{
            'project_id': 'p1', 'resource': 'FPGA', 'scope': 'project',
            'limit': 5, 'used': 3, 'reserved': 2, 'requested': 1}]
        assert over.json()['errors'][0]['request_id'] == (
            over.headers['X-Openstack-Request-Id'])

        malformed = http.post(url + '/v1/reservations', headers=dict(
            SERVICE, **{'Content-Type': 'application/json'}),
            data='{"project_id": ')
        assert malformed.status_code == 400
        assert malformed.json()['errors'][0]['code'] == 'cyquota.invalid_body'

        other = http.get(url + '/v1/quota_usages/p1', headers=dict(
            MEMBER, **{'X-Project-Id': 'p2'}))
        assert other.status_code == 403
        assert other.json()['errors'][0]['code'] == 'cyquota.forbidden'
        assert http.get(url + '/v1/openapi.json').json()['openapi'] == (
            '3.1.0')
    return usage.headers['X-Openstack-Request-Id']


def _concurrent_reserves(server, workers=8, attempts=5, limit=20):
    """``workers`` threads reserve 1 GPU ``attempts`` times each against a
    limit of ``limit``: exactly ``limit`` succeed, the rest are over
    quota, and the books agree."""
    url = server.url
    requests.put(url + '/v1/limits/p9/GPU', json={'resource_limit': limit},
                 headers=ADMIN).raise_for_status()

    def reserve_all(worker):
        statuses = []
        with requests.Session() as http:
            for attempt in range(attempts):
                statuses.append(http.post(
                    url + '/v1/reservations', headers=SERVICE, json={
                        'project_id': 'p9', 'deltas': {'GPU': 1},
                        'request_id': 'w%d-%d' % (worker, attempt)}
                ).status_code)
        return statuses

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        statuses = sum(pool.map(reserve_all, range(workers)), [])
    assert sorted(set(statuses)) == [201, 403]
    assert statuses.count(201) == limit
    usage = requests.get(url + '/v1/quota_usages/p9', headers=ADMIN).json()
    assert usage['quota_usage']['resources']['GPU']['reserved'] == limit


def _stops_cleanly(server, request_id):
    assert server.stop() == 0
    log = server.log()
    line = next(line for line in log.splitlines()
                if 'GET /v1/quota_usages/p1 200' in line)
    assert request_id in line
    assert 'cyquota-api serving on %s' % server.url in log
    assert 'Signal 15 received, stopping' in log


def test_cyquota_api_on_sqlite(sqlite_server):
    with sqlite_server:
        request_id = _walkthrough(sqlite_server)
        _concurrent_reserves(sqlite_server)
    _stops_cleanly(sqlite_server, request_id)


def test_cyquota_api_on_a_database_server(server):
    with server:
        request_id = _walkthrough(server)
        _concurrent_reserves(server)
    _stops_cleanly(server, request_id)


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_reads_take_a_fixed_number_of_statements(backend, ctx):
    """A usage read is one statement (counts, limits, parent and, from
    1.8, the budgets' remaining hours together); a lease list costs the
    same for one lease as for three."""
    statements = []

    def record(conn, cursor, statement, *args):
        statements.append(statement)

    def count(path, headers=ADMIN):
        statements.clear()
        http.get(path, headers=headers)
        return len(statements)

    def lease(hour):
        start = datetime.datetime(2100, 1, 1) + datetime.timedelta(hours=hour)
        http.post_json('/v1/leases', headers=ADMIN, params={'lease': {
            'project_id': 'p1', 'start_date': start.isoformat() + 'Z',
            'end_date': (start + datetime.timedelta(hours=1)).isoformat()
            + 'Z', 'reservations': [
                {'resource_type': 'accelerator:FPGA', 'amount': 1}]}})

    http = webtest.TestApp(app.setup_app())
    device = providers.create(ctx, 'dev1').uuid
    inventories.set_all(ctx, device, providers.get(ctx, device).generation,
                        {'FPGA': {'total': 4}})
    # The usage read runs on the autocommit engine, the rest on the other.
    engines = (db_api.get_engine(), db_api.get_autocommit_engine())
    for engine in engines:
        event.listen(engine, 'before_cursor_execute', record)
    try:
        assert count('/v1/quota_usages/p1', dict(ADMIN, **{
            'OpenStack-API-Version': 'accelerator-quota 1.7'})) == 1
        assert count('/v1/quota_usages/p1') == 1
        lease(0)
        one = count('/v1/leases?project_id=p1')
        lease(1)
        lease(2)
        assert len(http.get('/v1/leases?project_id=p1',
                            headers=ADMIN).json['leases']) == 3
        assert count('/v1/leases?project_id=p1') == one == 4
    finally:
        for engine in engines:
            event.remove(engine, 'before_cursor_execute', record)


def test_host_and_port_options_override_the_configuration(tmp_path):
    """``cyquota-api --host --port`` listens there, not on ``[api]``."""
    server = api_server.ApiServer(
        'sqlite:///%s' % (tmp_path / 'cyquota.sqlite'), directory=tmp_path)
    commands.manage(server.config_file, 'db', 'sync').check_returncode()
    configured = server.url
    server.port = api_server.free_port()
    server.url = 'http://localhost:%d' % server.port
    # start(), not ``with``: entering the server would start a second one.
    server.start(arguments=['--host', 'localhost', '--port', str(server.port)])
    try:
        assert requests.get(server.url + '/', timeout=30).ok
        with pytest.raises(requests.ConnectionError):
            requests.get(configured + '/', timeout=30)
    finally:
        server.stop()
    assert 'cyquota-api serving on http://localhost:%d' % server.port in (
        server.log())
