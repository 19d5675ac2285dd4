"""``cyquota-api --workers 2`` as a real process on PostgreSQL: two forked
children serve the one socket (each request's log line carries the PID
that served it), a killed child is replaced, and SIGTERM to the parent
stops every process; the ``[metrics] listen`` listener sums the counts of
both workers."""

import concurrent.futures
import os
import re
import signal
import subprocess
import time

from prometheus_client import parser
import pytest
import requests

from servers import api_server

ADMIN = {'X-Project-Id': 'admin-project', 'X-Roles': 'admin'}
# oslo.log's default line: "<date> <time> <pid> <level> <logger> ...".
_SERVED = re.compile(r'^\S+ \S+ (\d+) INFO cyquota\.api\.requestlog .* '
                     r'GET /v1/quota_usages/p1 200 ', re.MULTILINE)


def _children(pid):
    """PIDs of the processes whose parent is ``pid``, from ``ps``."""
    out = subprocess.run(['ps', '--ppid', str(pid), '-o', 'pid='],
                         capture_output=True, text=True, timeout=10).stdout
    return {int(line) for line in out.split()}


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _until(condition, timeout=15):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, 'not within %d s' % timeout
        time.sleep(0.1)


@pytest.fixture
def workers_server(tmp_path, db_url):
    server = api_server.ApiServer(db_url, directory=tmp_path,
                                  options={'api': {'threads': '2'}})
    server.start(arguments=['--workers', '2'])
    yield server
    server.stop()


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_two_workers_serve_one_socket_and_stop_on_sigterm(workers_server):
    parent = workers_server.process.pid
    _until(lambda: len(_children(parent)) == 2)
    children = _children(parent)

    def usage(_):
        response = requests.get(workers_server.url + '/v1/quota_usages/p1',
                                headers=ADMIN, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()['quota_usage']['project_id']

    def served_by():
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert set(pool.map(usage, range(40))) == {'p1'}
        return {int(pid) for pid in _SERVED.findall(workers_server.log())}

    _until(lambda: served_by() == children)

    # A dead child is replaced, and the new one serves too.
    victim = min(children)
    os.kill(victim, signal.SIGKILL)
    _until(lambda: victim not in _children(parent)
           and len(_children(parent)) == 2)
    replacement = (_children(parent) - children).pop()
    _until(lambda: replacement in served_by())

    assert workers_server.stop() == 0
    survivors = _children(parent) | {pid for pid in children | {replacement}
                                     if _alive(pid)}
    assert survivors == set()


def _requests_counted(text, path):
    """The requests ``GET path 200`` counted in one scrape."""
    return sum(sample.value
               for family in parser.text_string_to_metric_families(text)
               for sample in family.samples
               if sample.name == 'cyquota_api_request_duration_seconds_count'
               and sample.labels == {'method': 'GET', 'route': path,
                                     'status': '200'})


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_the_metrics_listener_sums_every_worker(tmp_path, db_url):
    listen = '127.0.0.1:%d' % api_server.free_port()
    server = api_server.ApiServer(db_url, directory=tmp_path, options={
        'api': {'threads': '2'}, 'metrics': {'listen': listen}})
    server.start(arguments=['--workers', '2'])
    try:
        parent = server.process.pid
        # Two API workers and the listener's process.
        _until(lambda: len(_children(parent)) == 3)
        made = 0

        def usage(_):
            response = requests.get(server.url + '/v1/quota_usages/p1',
                                    headers=ADMIN, timeout=10)
            assert response.status_code == 200, response.text

        while len(set(_SERVED.findall(server.log()))) < 2:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(usage, range(20)))
            made += 20
            assert made <= 400, 'one worker served every request'

        scraped = requests.get('http://%s/metrics' % listen, timeout=30)
        assert scraped.status_code == 200
        assert _requests_counted(scraped.text,
                                 '/v1/quota_usages/{project_id}') == made
        assert 'cyquota_quota_used' in scraped.text
        assert requests.get('http://%s/' % listen,
                            timeout=30).status_code == 404
        # The API port sums them too, for the callers the policy allows.
        assert requests.get(server.url + '/metrics',
                            timeout=30).status_code == 403
        assert _requests_counted(requests.get(
            server.url + '/metrics', headers=ADMIN, timeout=30).text,
            '/v1/quota_usages/{project_id}') == made
    finally:
        assert server.stop() == 0
