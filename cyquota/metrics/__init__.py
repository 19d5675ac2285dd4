"""cyquota's Prometheus counters (prometheus_client), named in
doc/source/metrics.rst: a ground-floor package that the books, the
leases, the enforcement chain and the cloud count into, and that imports
none of them (the ``/metrics`` page is the API's: ``api/metrics_page``).

The counters count what the books did: they are increased after the
ledger's transaction has committed, by the QuotaEngine, the LeaseEngine
and the enforcement chain, in whichever process did the work. Every metric
lives in ``REGISTRY``; with ``PROMETHEUS_MULTIPROC_DIR`` set in the
environment of every process (uWSGI workers, conductors of one host)
prometheus_client keeps the values in files there, and ``GET /metrics``
(``exposition``) sums them; ``cyquota-api --workers N`` sets it up for its
workers itself (:func:`share_between_processes`). The gauges read from the
database at each scrape are the API's (``cyquota.api.metrics_page``).
"""

import contextlib
import os
import time

import prometheus_client
from prometheus_client import values

from cyquota import exception

REGISTRY = prometheus_client.CollectorRegistry()

RESERVATIONS = prometheus_client.Counter(
    'cyquota_reservations', 'Reservations made or ended, by event '
    '(reserved, committed, rolled_back, expired).', ['event'],
    registry=REGISTRY)

OVER_QUOTA = prometheus_client.Counter(
    'cyquota_over_quota_refusals', 'Requests refused over quota (reserves '
    'and leases), by the scope of the limit that blocked them (project or '
    'tree) and resource.', ['scope', 'resource'], registry=REGISTRY)

LEASES = prometheus_client.Counter(
    'cyquota_lease_events', 'Leases started or ended, by event (started, '
    'ended).', ['event'], registry=REGISTRY)

REQUEST_LATENCY = prometheus_client.Histogram(
    'cyquota_api_request_duration_seconds', 'Time to answer a REST request, '
    'by method, route template and status code.',
    ['method', 'route', 'status'], registry=REGISTRY)

FILTER_CALLS = prometheus_client.Counter(
    'cyquota_enforcement_filter_calls', 'Usage-enforcement filter calls, '
    'by filter, call (check_create, check_update, on_end) and outcome '
    '(ok, denied, failed).', ['filter', 'call', 'outcome'],
    registry=REGISTRY)

FILTER_LATENCY = prometheus_client.Histogram(
    'cyquota_enforcement_filter_duration_seconds', 'Time a usage-'
    'enforcement filter took to answer, by filter and call.',
    ['filter', 'call'], registry=REGISTRY)

MIRROR_SYNCS = prometheus_client.Counter(
    'cyquota_placement_mirror_syncs', 'Syncs of the mirror of the cloud\'s '
    'Placement, by outcome (changed, unchanged, failed).', ['outcome'],
    registry=REGISTRY)

MIRROR_KEPT = prometheus_client.Counter(
    'cyquota_placement_mirror_kept_providers', 'Providers gone from '
    'Placement that the mirror kept, by reason (held: a live lease or '
    'reservation holds it; parent: a kept provider is below it).',
    ['reason'], registry=REGISTRY)

MIRROR_OVERCOMMITTED = prometheus_client.Counter(
    'cyquota_placement_mirror_overcommitted', 'Inventories that a sync of '
    'the Placement mirror left below what is held on them, by resource.',
    ['resource'], registry=REGISTRY)

LEASE_WRITES = prometheus_client.Counter(
    'cyquota_placement_lease_writes', 'Leases written back to the cloud\'s '
    'Placement, by outcome (written: a lease\'s allocation put; removed: '
    'an ended lease\'s allocation deleted; refused: Placement refused a '
    'start, once per change of its reason; failed: Placement did not '
    'answer as it should, tried again).', ['outcome'], registry=REGISTRY)

BUDGET_EXHAUSTIONS = prometheus_client.Counter(
    'cyquota_budget_exhaustions', 'Budgets of accelerator-hours found spent '
    '(a balance at or below zero), once per budget and period, by '
    'resource.', ['resource'], registry=REGISTRY)


def share_between_processes(directory):
    """Keep the values of this process, and of the processes it forks
    afterwards, in files in ``directory`` (an empty directory), so that a
    scrape of any of them sums them all. Call it before the first metric
    is counted."""
    os.environ['PROMETHEUS_MULTIPROC_DIR'] = directory
    # prometheus_client chose where values live when it was imported; every
    # metric here has labels, so none holds a value made before this.
    values.ValueClass = values.get_value_class()


def count_reservations(event, uuids):
    """Count ``uuids`` (reservations the books just changed) as ``event``."""
    if uuids:
        RESERVATIONS.labels(event).inc(len(uuids))


def count_over_quota(overs):
    """Count one refusal per blocked (scope, resource) of an OverQuota."""
    for scope, resource in sorted({(over['scope'], over['resource'])
                                   for over in overs}):
        OVER_QUOTA.labels(scope, resource).inc()


def count_budget_exhausted(resource):
    """Count one budget of ``resource`` found spent in its period."""
    BUDGET_EXHAUSTIONS.labels(resource).inc()


@contextlib.contextmanager
def filter_call(name, call):
    """Time one call of a usage-enforcement filter and count its outcome:
    ``ok``, ``denied`` (EnforcementDenied) or ``failed`` (anything else)."""
    started = time.monotonic()
    outcome = 'failed'
    try:
        yield
        outcome = 'ok'
    except exception.EnforcementDenied:
        outcome = 'denied'
        raise
    finally:
        FILTER_LATENCY.labels(name, call).observe(time.monotonic() - started)
        FILTER_CALLS.labels(name, call, outcome).inc()
