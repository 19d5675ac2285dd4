"""cyquota-policy-example as a real HTTP server on 127.0.0.1, consulted by
cyquota's ExternalServiceFilter."""

import datetime
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests

from servers import api_server

from cyquota.enforcement import chain
from cyquota.enforcement import external_service
from cyquota import exception
from cyquota.policy_example import app
from cyquota.policy_example import policy
from cyquota.policy_example import store
from tests import enforcement_helpers as helpers

pytestmark = pytest.mark.timeout(60)

TOKEN = 'policy-token-1'
HOUR = 3600
DAY = 86400
BIN = pathlib.Path(sys.executable).parent


class Clock:
    """A settable clock, starting when the test leases start."""

    def __init__(self):
        self.now = helpers.START.timestamp()

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def service(tmp_path, clock):
    """The policy app (budget 10 accelerator-hours per day) served on
    127.0.0.1 in a thread, with a settable clock."""
    charges = store.ChargeStore(str(tmp_path / 'charges.sqlite'))
    accelerator_policy = policy.AcceleratorHoursPolicy(
        charges, budget_hours=10, window_seconds=DAY, clock=clock)
    server = helpers.serve_wsgi(app.PolicyApp(accelerator_policy, TOKEN))
    yield server
    server.stop()
    charges.close()


@pytest.fixture
def cyquota_chain(tmp_path, service):
    """cyquota's chain with ExternalServiceFilter pointed at the service."""
    conf = helpers.make_conf(tmp_path, {
        'enforcement': {'enabled_filters': 'ExternalServiceFilter'},
        'enforcement_external': {'endpoint_url': service.url,
                                 'token': TOKEN}})
    return chain.load_chain(conf)


def lease(name, amount, hours):
    return helpers.lease_document(int(hours * HOUR), amount, name)


def usage(service, project_id='project-a'):
    response = requests.get('%s/projects/%s' % (service.url, project_id),
                            headers={'X-Auth-Token': TOKEN}, timeout=10)
    assert response.status_code == 200
    return response.json()


def test_charge_refuse_reprice_refund_and_window(service, cyquota_chain,
                                                 clock):
    context = helpers.request_context('project-a')
    # Charged on create: 2 accelerators for 3 hours.
    cyquota_chain.check_create(context, lease('a', 2, 3))
    assert usage(service)['charged_hours'] == 6
    # Refused over the budget, with the service's message; nothing charged.
    with pytest.raises(exception.EnforcementDenied) as denied:
        cyquota_chain.check_create(context, lease('b', 2, 3))
    assert denied.value.message == (
        "Lease 'b' would cost 6.00 accelerator-hours, but project "
        "project-a has only 4.00 of its 10 accelerator-hours left in the "
        "rolling window of 1 day, 0:00:00.")
    assert usage(service)['charged_hours'] == 6
    # Exactly the budget is allowed.
    cyquota_chain.check_create(context, lease('b', 1, 4))
    assert usage(service)['charged_hours'] == 10
    # Re-priced on update: 'a' shrinks to 3 h and is renamed 'a2'.
    cyquota_chain.check_update(context, lease('a', 2, 3), lease('a2', 1, 3))
    assert usage(service)['charged_hours'] == 7
    # Growing past the budget is refused and changes nothing.
    with pytest.raises(exception.EnforcementDenied):
        cyquota_chain.check_update(context, lease('a2', 1, 3),
                                   lease('a2', 2, 4))
    assert sorted((item['name'], item['hours'])
                  for item in usage(service)['leases']) == [
        ('a2', 3), ('b', 4)]
    # 'b' ends after one hour of its four: three hours refunded.
    clock.now += HOUR
    cyquota_chain.on_end(context, lease('b', 1, 4))
    document = usage(service)
    assert document['charged_hours'] == 4
    assert [item['ended'] for item in document['leases']] == [False, True]
    # Another project has its own budget.
    cyquota_chain.check_create(helpers.request_context('project-b'),
                               lease('a', 1, 10))
    # A day later the old charges have left the window.
    with pytest.raises(exception.EnforcementDenied):
        cyquota_chain.check_create(context, lease('c', 1, 7))
    clock.now += DAY
    cyquota_chain.check_create(context, lease('c', 1, 10))
    assert usage(service)['charged_hours'] == 10


def test_on_end_after_the_end_refunds_nothing(service, cyquota_chain, clock):
    context = helpers.request_context()
    cyquota_chain.check_create(context, lease('full', 1, 2))
    clock.now += 3 * HOUR
    cyquota_chain.on_end(context, lease('full', 1, 2))
    assert usage(service)['charged_hours'] == 2


def test_a_pending_lease_ended_early_is_fully_refunded(service,
                                                       cyquota_chain, clock):
    context = helpers.request_context()
    cyquota_chain.check_create(context, lease('later', 1, 2))
    clock.now -= HOUR
    cyquota_chain.on_end(context, lease('later', 1, 2))
    assert usage(service)['charged_hours'] == 0


def test_a_wrong_token_is_refused(tmp_path, service):
    conf = helpers.make_conf(tmp_path, {'enforcement_external': {
        'endpoint_url': service.url, 'token': 'wrong'}})
    with pytest.raises(exception.EnforcementDenied) as denied:
        external_service.ExternalServiceFilter(conf).check_create(
            helpers.context_document(), lease('a', 1, 1))
    assert denied.value.message == (
        'The usage enforcement service could not decide (HTTP 401); the '
        'request is refused.')
    assert usage(service)['charged_hours'] == 0


@pytest.mark.parametrize('body', [
    b'not json', b'[]', b'{"context": {"project_id": "p"}}',
    json.dumps({'context': {'project_id': 'p'},
                'lease': {'name': 'x', 'start_date': 'tomorrow',
                          'end_date': '2030-01-01T01:00:00+00:00',
                          'reservations': []}}).encode(),
    json.dumps({'context': {'project_id': 'p'},
                'lease': {'name': 'x',
                          'start_date': '2030-01-01T00:00:00+00:00',
                          'end_date': '2030-01-01T01:00:00+00:00',
                          'reservations': [{'resource_type': 'physical:host',
                                            'min': 1}]}}).encode(),
    json.dumps({'context': {'project_id': 'p'},
                'lease': {'name': 'x',
                          'start_date': '2030-01-01T00:00:00+00:00',
                          'end_date': '2030-01-01T01:00:00+00:00',
                          'reservations': [{'amount': 'two'}]}}).encode()])
def test_a_malformed_document_is_a_400(service, body):
    response = requests.post(service.url + '/check-create', data=body,
                             headers={'X-Auth-Token': TOKEN}, timeout=10)
    assert response.status_code == 400
    assert response.json()['message'].startswith('Invalid request: ')


def test_unknown_paths_and_methods(service):
    headers = {'X-Auth-Token': TOKEN}
    assert requests.get(service.url + '/check-create', headers=headers,
                        timeout=10).status_code == 405
    assert requests.post(service.url + '/nothing', headers=headers,
                         timeout=10).status_code == 404


class OutputReader:
    """Collects the lines of a pipe in a thread."""

    def __init__(self, pipe):
        self.lines = []
        self._thread = threading.Thread(target=self._read, args=(pipe,),
                                        daemon=True)
        self._thread.start()

    def _read(self, pipe):
        for line in pipe:
            self.lines.append(line)

    def wait_for(self, pattern, timeout=30):
        """The first match of ``pattern`` in a line, waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                match = re.search(pattern, line)
                if match:
                    return match
            time.sleep(0.05)
        raise AssertionError('no %r in the output: %s'
                             % (pattern, ''.join(self.lines)))

    @property
    def text(self):
        return ''.join(self.lines)


def test_the_console_script(tmp_path):
    db = tmp_path / 'policy.sqlite'
    environment = dict(os.environ, CYQUOTA_POLICY_TOKEN=TOKEN)
    process = subprocess.Popen(
        [str(BIN / 'cyquota-policy-example'), '--host', '127.0.0.1',
         '--port', '0', '--db', str(db), '--budget', '4', '--window',
         '3600'], env=environment, stderr=subprocess.PIPE, text=True)
    output = OutputReader(process.stderr)
    try:
        url = output.wait_for(r'serving on (http://127\.0\.0\.1:\d+)')[1]
        now = datetime.datetime.now(datetime.timezone.utc)
        service_filter = external_service.ExternalServiceFilter(
            helpers.make_conf(tmp_path, {'enforcement_external': {
                'endpoint_url': url, 'token': TOKEN}}))
        context = helpers.context_document('project-x')
        three_hours = helpers.lease_document(3 * HOUR, 1, 'three', now)
        service_filter.check_create(context, three_hours)
        with pytest.raises(exception.EnforcementDenied,
                           match="^Lease 'two' would cost 2.00"):
            service_filter.check_create(
                context, helpers.lease_document(2 * HOUR, 1, 'two', now))
        service_filter.on_end(context, three_hours)
        output.wait_for(r'on-end project project-x')
        assert "check-create project project-x lease 'three'" in output.text
        assert 'ALLOWED' in output.text and 'REFUSED' in output.text
        assert TOKEN not in output.text
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    # The charges outlive the process: just under 3 h refunded.
    charges = store.ChargeStore(str(db))
    (charge,) = charges.charges('project-x', 0)
    charges.close()
    assert charge.ended and charge.hours < 0.01


def _start_up_failure(tmp_path, *args):
    return subprocess.run(
        [str(BIN / 'cyquota-policy-example'), '--host', '127.0.0.1',
         '--db', str(tmp_path / 'policy.sqlite'), *args],
        capture_output=True, text=True, timeout=60)


def test_a_missing_db_directory_is_one_line(tmp_path):
    db = tmp_path / 'missing' / 'policy.sqlite'
    result = _start_up_failure(tmp_path, '--port', '0', '--db', str(db))
    assert result.returncode == 1
    assert result.stderr == (
        'cyquota-policy-example: cannot open the charges file %s: unable to '
        'open database file\n' % db)


def test_a_port_in_use_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _start_up_failure(tmp_path, '--port', str(port))
    assert result.returncode == 1
    assert result.stderr == (
        'cyquota-policy-example: cannot listen on 127.0.0.1:%d: Address '
        'already in use\n' % port)


def _doc_commands():
    """``[(command, shown lines)]`` of doc/source/policy-example.rst."""
    from tests.unit import test_readme
    doc = pathlib.Path(__file__).resolve().parents[2] / 'doc' / \
        'source' / 'policy-example.rst'
    return test_readme.steps(doc.read_text())


def test_the_docs_commands_work_as_written(tmp_path):
    """Start the service as the doc does (its file and port this test's
    own), then read a project as the doc does."""
    (export, _), (start, [started]), (read, shown) = _doc_commands()
    port = str(api_server.free_port())
    db = str(tmp_path / 'policy.sqlite')
    start = start.replace('/var/lib/cyquota/policy.sqlite', db).replace(
        '6790', port)
    started = started.replace('/var/lib/cyquota/policy.sqlite', db).replace(
        '6790', port)
    environment = dict(os.environ, PATH=os.pathsep.join(
        [str(BIN), os.environ['PATH']]))
    token = subprocess.run(['bash', '-c', export + '; echo '
                            '"$CYQUOTA_POLICY_TOKEN"'], capture_output=True,
                           text=True, check=True).stdout.strip()
    environment['CYQUOTA_POLICY_TOKEN'] = token
    process = subprocess.Popen(['bash', '-c', 'exec ' + start],
                               env=environment, stderr=subprocess.PIPE,
                               text=True)
    output = OutputReader(process.stderr)
    try:
        line = output.wait_for('serving on').string.rstrip('\n')
        assert line.split(' ', 2)[2] == started.split(' ', 2)[2]
        result = subprocess.run(['bash', '-c', read.replace('6790', port)],
                                env=environment, capture_output=True,
                                text=True, timeout=30)
        assert result.stdout.splitlines() == shown
    finally:
        process.terminate()
        process.wait(timeout=20)
