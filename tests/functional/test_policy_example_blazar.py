"""cyquota-policy-example serves Blazar itself: Blazar's own
ExternalServiceFilter (from PyPI, in its own virtualenv) with Blazar-shaped
documents (naive dates, a ``physical:host`` reservation of ``min``/``max``
hosts, no lease id on create, no name on an update that does not rename)
against the example running as a real server on 127.0.0.1."""

import datetime
import pathlib
import socket
import subprocess
import sys
import time

import pytest
import requests

from tests.functional import blazar_env

pytestmark = pytest.mark.timeout(1800)

TOKEN = 'blazar-policy-token'
BIN = pathlib.Path(sys.executable).parent
HOUR = datetime.timedelta(hours=1)
LEASE_ID = '5d7b4c1e-2f0a-4e77-9a51-0c3e8d2b6f14'


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@pytest.fixture
def policy_url(tmp_path):
    """cyquota-policy-example on a free port: 100 host-hours a day."""
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / 'cyquota-policy-example'), '--port', str(port), '--db',
         str(tmp_path / 'charges.sqlite'), '--budget', '100', '--window',
         '86400', '--token', TOKEN],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(('127.0.0.1', port), 1).close()
            break
        except OSError:
            assert process.poll() is None, 'the service exited'
            assert time.monotonic() < deadline, 'the service is mute'
            time.sleep(0.05)
    yield 'http://127.0.0.1:%d' % port
    process.terminate()
    process.wait(timeout=20)


def host_reservation(hosts):
    return {'resource_type': 'physical:host', 'min': '1', 'max': str(hosts),
            'hypervisor_properties': '', 'resource_properties': '',
            'allocations': []}


def test_blazar_create_update_and_end(policy_url):
    start = datetime.datetime.utcnow().replace(microsecond=0) + 2 * HOUR
    context = {'user_id': 'u-1', 'project_id': 'lab',
               'auth_url': 'http://127.0.0.1:5000/v3',
               'region_name': 'RegionOne'}
    created = {'name': 'train', 'user_id': 'u-1', 'project_id': 'lab',
               'start_date': blazar_env.datetime_value(start),
               'end_date': blazar_env.datetime_value(start + 10 * HOUR),
               'reservations': [host_reservation(2)]}
    # As stored by Blazar once created: it has an id from now on.
    current = dict(created, id=LEASE_ID, status='PENDING')
    # Blazar's update values: new dates and reservations, no name, no id.
    updated = {'start_date': blazar_env.datetime_value(start),
               'end_date': blazar_env.datetime_value(start + 15 * HOUR),
               'reservations': [host_reservation(2)]}
    ended = dict(current, end_date=updated['end_date'])
    too_big = dict(created, name='huge',
                   end_date=blazar_env.datetime_value(start + 40 * HOUR))

    def usage():
        return requests.get(policy_url + '/projects/lab',
                            headers={'X-Auth-Token': TOKEN},
                            timeout=10).json()

    def run(*calls):
        # Blazar joins with urljoin: the base needs its trailing slash.
        return blazar_env.run_external_service_filter(
            policy_url + '/', TOKEN, list(calls))

    assert run(['check_create', context, created],
               ['check_update', context, current, updated]) == [
        'allowed', 'allowed']
    # Charged 2 hosts x 10 h, re-priced to 2 x 15 h under the lease's id,
    # keeping its name.
    (lease,) = usage()['leases']
    assert (lease['id'], lease['name'], lease['ended'], lease['hours']) == (
        LEASE_ID, 'train', False, 30)
    refused, end = run(['check_create', context, too_big],
                       ['on_end', context, ended])
    assert refused.startswith(
        "Lease 'huge' would cost 80.00 accelerator-hours, but project lab "
        "has only 70.00 of its 100 accelerator-hours left")
    assert end == 'allowed'
    # Refunded in full: it ended before its start.
    document = usage()
    (lease,) = document['leases']
    assert (lease['id'], lease['name'], lease['ended'], lease['hours']) == (
        LEASE_ID, 'train', True, 0)
    assert document['charged_hours'] == 0
