"""The external policy service hung and killed under lease creates, on
PostgreSQL and MariaDB.

A real ``cyquota-api`` consults a real ``cyquota-policy-example`` through
ExternalServiceFilter while concurrent clients create leases. The service
is frozen (SIGSTOP: it accepts connections and never answers), then killed
(SIGKILL: connections refused), then started again on its port. Every
create answers within the filter's timeout with SPEC's 403
``cyquota.enforcement_denied`` and its generic message; a lease refused
because the service could not decide is not stored (no ERROR lease each
time: nothing refused it) and holds no quota and no device (nothing
half-written); and once the service is back creates succeed again, with no
restart of cyquota-api.
"""

import concurrent.futures
import datetime
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests

from cyquota.db import lease_models
from cyquota.quota import QUOTAS
from servers import api_server
from tests.functional import ledger_books
from tests.unit.placement.conftest import Tree

pytestmark = pytest.mark.timeout(120)

BIN = pathlib.Path(sys.executable).parent
TIMEOUT = 0.5  # [enforcement_external] timeout, seconds
#: A refused create answers within the timeout plus this much work.
ANSWER_BOUND = TIMEOUT + 4.0
CLIENTS = 4
PROJECTS = ('policy-a', 'policy-b')
LIMIT = 40
HEADERS = {'X-User-Id': 'alice', 'X-Roles': 'member'}
REFUSAL = ('The usage enforcement service could not decide (%s); the '
           'request is refused.')


class PolicyService:
    """``cyquota-policy-example`` on a port of its own, kept across starts,
    with its charges in one file."""

    def __init__(self, directory):
        self.port = api_server.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.db = directory / 'charges.sqlite'
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [str(BIN / 'cyquota-policy-example'), '--port', str(self.port),
             '--db', str(self.db), '--budget', '100000'],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(('127.0.0.1', self.port), 1).close()
                return
            except OSError:
                assert self.process.poll() is None, 'the service exited'
                assert time.monotonic() < deadline, 'the service is mute'
                time.sleep(0.05)

    def signal(self, signum):
        self.process.send_signal(signum)

    def kill(self):
        self.process.kill()
        self.process.wait()


@pytest.fixture
def policy_service(tmp_path):
    service = PolicyService(tmp_path)
    service.start()
    yield service
    service.signal(signal.SIGCONT)
    service.kill()


@pytest.fixture
def api(backend, db_url, tmp_path, policy_service, ctx):
    """cyquota-api with ExternalServiceFilter on the policy service, and
    one compute node with FPGAs for the leases."""
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('fpga0', parent='cn1', inventory={'FPGA': {'total': 100}})
    for project in PROJECTS:
        QUOTAS.limits.set_project_limit(ctx, project, 'FPGA', LIMIT)
    server = api_server.ApiServer(db_url, {
        'enforcement': {'enabled_filters': 'ExternalServiceFilter'},
        'enforcement_external': {'endpoint_url': policy_service.url,
                                 'timeout': str(TIMEOUT)}},
        directory=tmp_path)
    server.start()
    yield server
    server.stop()


def _create(api, n):
    """One lease create: (project, status code, body, seconds)."""
    project = PROJECTS[n % len(PROJECTS)]
    start = datetime.datetime.now(datetime.timezone.utc)
    # Every other lease starts later: a pending lease's promise must not be
    # left behind by a refusal either.
    start += datetime.timedelta(hours=n % 2)
    body = {'lease': {
        'name': 'lease-%d' % n, 'start_date': start.isoformat(),
        'end_date': (start + datetime.timedelta(hours=1)).isoformat(),
        'reservations': [{'resource_type': 'accelerator:FPGA',
                          'amount': 1}]}}
    began = time.monotonic()
    response = requests.post(api.url + '/v1/leases', json=body, timeout=30,
                             headers=dict(HEADERS, **{'X-Project-Id':
                                                      project}))
    return project, response.status_code, response.json(), \
        time.monotonic() - began


def _burst(api, first, count):
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as clients:
        return list(clients.map(lambda n: _create(api, n),
                                range(first, first + count)))


def _assert_refused(answers, reason):
    for _, status, body, seconds in answers:
        assert status == 403, body
        error = body['errors'][0]
        assert error['code'] == 'cyquota.enforcement_denied'
        assert error['detail'] == REFUSAL % reason
        assert seconds < ANSWER_BOUND


def test_hung_and_dead_policy_service(api, policy_service, ctx):
    allowed = _burst(api, 0, 4)
    assert [a[1] for a in allowed] == [201] * 4

    policy_service.signal(signal.SIGSTOP)
    _assert_refused(_burst(api, 4, 8), 'timeout')
    policy_service.signal(signal.SIGCONT)
    policy_service.kill()
    _assert_refused(_burst(api, 12, 8), 'connection error')

    policy_service.start()
    back = _burst(api, 20, 4)
    assert [a[1] for a in back] == [201] * 4

    leases = {lease['name']: lease for lease in ledger_books.table('leases')}
    assert sorted(leases) == sorted(
        'lease-%d' % n for n in (*range(4), *range(20, 24)))
    granted = list(leases.values())
    assert lease_models.ERROR not in {lease['status'] for lease in granted}

    # The refused leases hold nothing: each project holds exactly its
    # granted leases, active ones as used and pending ones as promised.
    for project in PROJECTS:
        usage = QUOTAS.get_project_usage(ctx, project)['FPGA']
        mine = [lease for lease in granted if lease['project_id'] == project]
        assert usage['used'] == usage['leased'] == sum(
            1 for lease in mine if lease['status'] == lease_models.ACTIVE)
        # The pending leases share one window: their peak is their sum.
        assert usage['promised'] == sum(
            1 for lease in mine if lease['status'] == lease_models.PENDING)
        assert usage['reserved'] == 0
    allocated = {row['consumer_id'] for row in ledger_books.table(
        'device_allocations')}
    assert allocated == {lease['id'] for lease in granted
                         if lease['status'] == lease_models.ACTIVE}
