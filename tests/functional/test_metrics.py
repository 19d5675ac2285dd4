"""``GET /metrics`` after a workload through the API: the counters and
gauges match the books.

A ``cyquota-api`` and a ``cyquota-conductor`` (which expires reservations)
run on PostgreSQL and share a ``PROMETHEUS_MULTIPROC_DIR``, as on one host
of a deployment; a scrape of the API shows both processes' counts."""

import datetime
import os
import subprocess
import time

import prometheus_client
from prometheus_client import parser
import pytest
import requests

from cyquota.api import metrics_page
from cyquota.api import usage_gauges as usage
from cyquota import conf
from cyquota import quota
from servers import api_server
from tests import fixtures
from tests.functional import conftest

ADMIN = {'X-Roles': 'admin'}
SERVICE = {'X-Roles': 'service'}
MEMBER = {'X-Roles': 'member', 'X-Project-Id': 'p3', 'X-User-Id': 'u3'}
# Within [leases] max_duration (a year) from now: midnight a month ahead.
FAR = (datetime.datetime.now(datetime.timezone.utc).replace(
    hour=0, minute=0, second=0, microsecond=0)
    + datetime.timedelta(days=30)).isoformat()


@pytest.fixture(scope='module')
def pg_url():
    try:
        url = fixtures.create_database('postgresql')
    except Exception as error:  # any driver error: server not there
        conftest._unavailable('postgresql', error)
    yield url
    fixtures.drop_database(url)


@pytest.fixture(scope='module')
def host(pg_url, tmp_path_factory):
    """The API (its ``url``) with a conductor beside it."""
    directory = tmp_path_factory.mktemp('host')
    shared = directory / 'prometheus'
    shared.mkdir()
    server = api_server.ApiServer(pg_url, directory=directory, options={
        'metrics': {'usage_projects': '2'},
        'conductor': {'expire_interval': '1', 'lease_interval': '1'},
        'enforcement': {'enabled_filters': 'MaxLeaseDurationFilter',
                        'max_lease_duration': '86400'}})
    fixtures.use_database(pg_url)  # migrated here: one process fewer
    environ = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(shared))
    conductor = subprocess.Popen(
        [str(api_server.BIN / 'cyquota-conductor'), '--config-file',
         str(server.config_file)], env=environ,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ['PROMETHEUS_MULTIPROC_DIR'] = str(shared)
    try:
        server.start()
    finally:
        del os.environ['PROMETHEUS_MULTIPROC_DIR']
    try:
        yield server
    finally:
        server.stop()
        conductor.terminate()
        conductor.wait(timeout=60)


def _call(host, method, path, headers, body=None, status=None):
    response = requests.request(method, host.url + path, json=body,
                                headers=headers, timeout=30)
    if status is not None:
        assert response.status_code == status, response.text
    return response


def _workload(host):
    _call(host, 'PUT', '/v1/registered_limits/FPGA', ADMIN,
          {'default_limit': 4}, 200)
    provider = _call(host, 'POST', '/v1/resource_providers', ADMIN,
                     {'name': 'fpga-node-1'}).json()['uuid']
    _call(host, 'PUT', '/v1/resource_providers/%s/inventories' % provider,
          ADMIN, {'resource_provider_generation': 0,
                  'inventories': {'FPGA': {'total': 4}}}, 200)

    def reserve(project, deltas, status=201, **extra):
        return _call(host, 'POST', '/v1/reservations', SERVICE, dict(
            project_id=project, deltas=deltas, **extra), status).json()

    # Each commit and rollback sent twice, as an agent that lost the
    # answer does: counted once.
    kept = reserve('p1', {'FPGA': 2})['reservations']
    for _ in range(2):
        _call(host, 'POST', '/v1/reservations/commit', SERVICE,
              {'project_id': 'p1', 'reservations': kept}, 204)
    dropped = reserve('p1', {'FPGA': 1, 'GPU': 1})['reservations']
    for _ in range(2):
        _call(host, 'POST', '/v1/reservations/rollback', SERVICE,
              {'project_id': 'p1', 'reservations': dropped}, 204)
    reserve('p2', {'GPU': 1}, expire=1)
    reserve('p1', {'FPGA': 3}, status=403)
    reserve('p1', {'FPGA': 3}, status=200, dry_run=True)

    lease = {'end_date': FAR, 'reservations': [
        {'resource_type': 'accelerator:FPGA', 'amount': 1}]}
    _call(host, 'POST', '/v1/leases', MEMBER, {'lease': lease}, 403)
    lease['end_date'] = time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(
        time.time() + 3600))
    lease_id = _call(host, 'POST', '/v1/leases', MEMBER, {'lease': lease},
                     201).json()['lease']['id']
    _call(host, 'DELETE', '/v1/leases/%s' % lease_id, MEMBER, None, 204)

    deadline = time.monotonic() + 60
    while not _call(host, 'GET', '/v1/reservations?status=expired',
                    ADMIN).json()['reservations']:
        assert time.monotonic() < deadline, 'the conductor expired nothing'
        time.sleep(0.5)


def _samples(text):
    """``{(name, frozenset(labels.items())): value}`` of one scrape."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


def _scrape(host):
    return _samples(_call(host, 'GET', '/metrics', ADMIN, None, 200).text)


def _value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0)


def test_counters_and_gauges_match_the_books(host):
    _workload(host)
    samples = _scrape(host)
    rows = _call(host, 'GET', '/v1/reservations', ADMIN).json()[
        'reservations']

    def rows_in(status):
        return len([row for row in rows if row['status'] == status])

    counted = 'cyquota_reservations_total'
    assert _value(samples, counted, event='reserved') == len(rows) == 4
    # The expiry was counted by the conductor, in another process.
    for event, status in (('committed', 'committed'),
                          ('rolled_back', 'rolled_back'),
                          ('expired', 'expired')):
        assert _value(samples, counted, event=event) == rows_in(status)
    assert _value(samples, 'cyquota_over_quota_refusals_total',
                  scope='project', resource='FPGA') == 1
    assert _value(samples, 'cyquota_lease_events_total',
                  event='started') == 1
    assert _value(samples, 'cyquota_lease_events_total', event='ended') == 1
    calls = 'cyquota_enforcement_filter_calls_total'
    for call, outcome in (('check_create', 'denied'), ('check_create', 'ok'),
                          ('on_end', 'ok')):
        assert _value(samples, calls, filter='MaxLeaseDurationFilter',
                      call=call, outcome=outcome) == 1

    latency = 'cyquota_api_request_duration_seconds_count'
    assert _value(samples, latency, method='POST', route='/v1/reservations',
                  status='201') == 3
    assert _value(samples, latency, method='DELETE',
                  route='/v1/leases/{lease_id}', status='204') == 1
    routes = {dict(labels)['route'] for name, labels in samples
              if name == latency}
    assert not any('p1' in route or 'fpga' in route for route in routes)

    # Usage gauges: the usage rows of the two projects holding the most
    # (p1 holds 2 FPGAs; p2 and p3 nothing, p2 first by name), the rest
    # summed in series of their own.
    books = _call(host, 'GET', '/v1/quota_usages', ADMIN).json()[
        'quota_usages']
    assert {row['project_id'] for row in books} == {'p1', 'p2', 'p3'}

    def labels_of(row):
        if row['project_id'] == 'p3':
            return dict([usage.OTHERS], resource=row['resource'])
        return {'project_id': row['project_id'], 'resource': row['resource']}
    series = [dict(labels) for name, labels in samples
              if name == 'cyquota_quota_used']
    assert sorted(sorted(labels.items()) for labels in series) == sorted(
        sorted(labels_of(row).items()) for row in books)
    for row in books:
        for field in ('used', 'reserved', 'limit', 'promised'):
            assert _value(samples, 'cyquota_quota_%s' % field,
                          **labels_of(row)) == row[field], (row, field)
    assert _value(samples, 'cyquota_quota_used', project_id='p1',
                  resource='FPGA') == 2


def test_metrics_on_the_api_port_need_the_policy(host):
    for headers in ({}, MEMBER, {'X-Roles': 'reader'}):
        refused = _call(host, 'GET', '/metrics', headers, None, 403)
        [error] = refused.json()['errors']
        assert error['code'] == 'cyquota.forbidden'
        assert 'cyquota_quota_used' not in refused.text
    for headers in (ADMIN, SERVICE):
        shown = _call(host, 'GET', '/metrics', headers, None, 200)
        assert 'cyquota_api_request_duration_seconds' in shown.text


def test_usage_beyond_the_cap_is_summed(sqlite_db, ctx):
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 10)
    for project, amount in (('a', 1), ('b', 3), ('c', 2), ('d', 2)):
        quota.QUOTAS.reserve(ctx, project, {'FPGA': amount})
    quota.QUOTAS.limits.set_project_limit(ctx, 'd', 'FPGA', -1)
    shown, others = usage.books(ctx, 2)
    assert sorted(shown) == [('b', 'FPGA'), ('c', 'FPGA')]
    assert others == {'FPGA': {'used': 0, 'reserved': 3, 'limit': -1,
                               'promised': 0}}
    assert usage.books(ctx, 0) == ({}, {'FPGA': {
        'used': 0, 'reserved': 8, 'limit': -1, 'promised': 0}})


def test_a_project_named_like_the_old_catch_all_is_not_merged(sqlite_db,
                                                              ctx):
    """A project ``_other`` keeps its own series beside the summed ones
    (it was once summed into them: its 50 reserved shown as 155)."""
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 100)
    for project, amount in (('_other', 50), ('big', 60), ('a', 2), ('b', 3)):
        quota.QUOTAS.reserve(ctx, project, {'FPGA': amount})
    conf.CONF.set_override('usage_projects', 2, 'metrics')
    try:
        samples = _samples(prometheus_client.generate_latest(
            metrics_page.registry()).decode())
    finally:
        conf.CONF.clear_override('usage_projects', 'metrics')
    reserved = {labels: value for (name, labels), value in samples.items()
                if name == 'cyquota_quota_reserved'}
    assert reserved == {
        frozenset({'project_id': 'big', 'resource': 'FPGA'}.items()): 60,
        frozenset({'project_id': '_other', 'resource': 'FPGA'}.items()): 50,
        frozenset({'projects': 'others', 'resource': 'FPGA'}.items()): 5}
