"""``[leases] max_leases_per_project`` under concurrent creates, on
PostgreSQL and MariaDB: processes create leases of one project at once,
of two resources (whose quota rows do not lock each other), and of a
project that has no lease yet (whose lock row they race to insert); no
more than the bound are stored, live or ERROR.
"""

import datetime
import logging

import pytest

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import lease_models
from cyquota import exception
from cyquota import leases
from cyquota.quota import QUOTAS
from tests import enforcement_helpers
from tests import fixtures
from tests.functional import ledger_books
from tests.unit.placement.conftest import Tree

pytestmark = pytest.mark.timeout(300)

WORKERS = 8
BOUND = 3
PROJECT = 'bounded'
_START_TIMEOUT = 120

_start = None


def _start_worker(url, start):
    global _start
    _start = start
    fixtures.start_worker(url)
    CONF.set_override('max_leases_per_project', BOUND, 'leases')
    CONF.set_override('timeout', 2, 'enforcement_external')
    logging.getLogger('cyquota').setLevel(logging.ERROR)


def _ask(policy_url):
    """The filters of this create: the policy service at ``policy_url``,
    or none."""
    if policy_url:
        CONF.set_override('enabled_filters', ['ExternalServiceFilter'],
                          'enforcement')
        CONF.set_override('endpoint_url', policy_url, 'enforcement_external')
    else:
        CONF.clear_override('enabled_filters', 'enforcement')
    leases.LEASES.reset()


def _create(number, policy_url):
    """Wait for every worker, then create one lease: what came of it."""
    _ask(policy_url)
    _start.wait(timeout=_START_TIMEOUT)
    start = (datetime.datetime.now(datetime.timezone.utc)
             + datetime.timedelta(hours=1 + number))
    resource = ('FPGA', 'GPU')[number % 2]
    try:
        leases.LEASES.create(
            cyquota_context.get_admin_context(), PROJECT, dict(
                start_date=start.isoformat(),
                end_date=(start + datetime.timedelta(hours=1)).isoformat(),
                reservations=[{'resource_type': 'accelerator:' + resource,
                               'amount': 1}]))
    except exception.LeaseLimitExceeded:
        return 'lease limit'
    except exception.EnforcementUnavailable:
        return 'undecided'
    except exception.EnforcementDenied:
        return 'denied'
    return 'created'


worker_pools = fixtures.worker_pools(WORKERS, _start_worker)


@pytest.fixture
def creates(db_url, ctx, worker_pools):
    """``creates(policy_url)``: WORKERS processes create a lease each at
    once (started once per database, spawning is slow); returns what came
    of them."""
    pool = worker_pools.of(db_url)
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev1', parent='cn1',
                  inventory={'FPGA': {'total': 100}, 'GPU': {'total': 100}})
    for resource in ('FPGA', 'GPU'):
        QUOTAS.limits.set_registered_limit(ctx, resource, 100)

    def run(policy_url=None):
        return sorted(pool.starmap(
            _create, [(n, policy_url) for n in range(WORKERS)], chunksize=1))

    return run


def _stored():
    return sorted(lease['status'] for lease in ledger_books.table('leases'))


def test_concurrent_creates_do_not_pass_the_bound(backend, creates):
    assert creates() == ['created'] * BOUND + ['lease limit'] * (
        WORKERS - BOUND)
    assert _stored() == [lease_models.PENDING] * BOUND


def test_concurrent_denials_store_no_more_error_leases_than_the_bound(
        backend, creates):
    service = enforcement_helpers.RecordingService(
        answer=(403, b'{"message": "over budget"}'), delay=0.2)
    try:
        outcomes = creates(service.url)
    finally:
        service.stop()
    assert outcomes == ['denied'] * BOUND + ['lease limit'] * (
        WORKERS - BOUND)
    assert _stored() == [lease_models.ERROR] * BOUND


def test_a_service_that_cannot_decide_leaves_no_error_lease(backend,
                                                            creates):
    # Slower than the filter's timeout: every create is refused, and none
    # is stored (it stored one ERROR lease each).
    service = enforcement_helpers.RecordingService(delay=4)
    try:
        outcomes = creates(service.url)
    finally:
        service.stop()
    assert outcomes == ['undecided'] * WORKERS
    assert _stored() == []
