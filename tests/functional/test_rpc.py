"""The conductor RPC API over the real RabbitMQ, the ledger on the real
PostgreSQL: quota errors cross the wire as the same cyquota exceptions, and
the conductor refuses what the REST API would (``tests.conductor_trust``)."""

import datetime

import pytest

from cyquota.conductor import rpcapi
from cyquota.conductor import service as conductor_service
from cyquota import exception
from cyquota import quota
from cyquota.quota import attachments
from tests import conductor_trust as trust

pytestmark = pytest.mark.parametrize('backend', ['postgresql'],
                                     indirect=True)


@pytest.fixture
def api(rabbit, backend):
    """A client, and a conductor serving in this process on RabbitMQ."""
    rabbit.hosts.add('rpc-test-conductor')
    conductor = conductor_service.ConductorService('rpc-test-conductor')
    conductor.start()
    rabbit.wait_for_server(conductor.host)
    yield rpcapi.ConductorAPI(timeout=30)
    conductor.stop()
    conductor.wait()


def test_reserve_commit_rollback_release(api, ctx):
    uuids = api.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1}, expire=3600,
                        request_id='req-1', consumer_id='vm1')
    assert len(uuids) == 2
    assert api.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1},
                       request_id='req-1') == uuids
    api.commit(ctx, 'p1', uuids)
    tomorrow = datetime.datetime.now(datetime.timezone.utc) + (
        datetime.timedelta(days=1))
    other = api.reserve(ctx, 'p1', {'FPGA': 1},
                        expire=tomorrow.isoformat().replace('+00:00', 'Z'))
    api.rollback(ctx, 'p1', other)
    assert len(api.release(ctx, 'p1', {'GPU': 1}, consumer_id='vm1')) == 1
    usage = api.get_usage(ctx, 'p1')
    assert {r: (u['used'], u['reserved']) for r, u in usage.items()} == {
        'FPGA': (2, 0), 'GPU': (0, 0)}
    assert quota.QUOTAS.get_project_usage(ctx, 'p1') == usage


def test_over_quota_arrives_as_over_quota_with_its_overs(api, ctx):
    quota.QUOTAS.limits.set_project_limit(ctx, 'p1', 'GPU', 2)
    api.reserve(ctx, 'p1', {'GPU': 1})
    with pytest.raises(exception.OverQuota) as caught:
        api.reserve(ctx, 'p1', {'GPU': 2})
    error = caught.value
    assert type(error).__name__ == 'OverQuota_Remote'
    assert (error.code, error.kind) == (403, 'over_quota')
    assert error.overs == [{'project_id': 'p1', 'resource': 'GPU',
                            'scope': 'project', 'limit': 2, 'used': 0,
                            'reserved': 1, 'requested': 2}]
    assert error.message.startswith('Quota exceeded: project p1 over limit')
    assert quota.QUOTAS.get_project_usage(ctx, 'p1')['GPU']['reserved'] == 1


@pytest.mark.parametrize('method, kwargs, error', [
    ('reserve', dict(project_id='p1', deltas={'TPU': 1}),
     exception.UnknownResource),
    ('reserve', dict(project_id='p1', deltas={'FPGA': -3}),
     exception.InvalidDelta),
    ('reserve', dict(project_id='p1', deltas={'FPGA': 1},
                     expire='2099-01-01T00:00:00'), exception.InvalidExpire),
    ('commit', dict(project_id='p1',
                    reservations=['00000000-0000-0000-0000-000000000000']),
     exception.ReservationNotFound),
    ('report_allocations', dict(host='h1', allocations=[{'project_id': 'p1'}]),
     exception.InvalidAllocation),
])
def test_bad_input_arrives_as_its_specific_error(api, ctx, method, kwargs,
                                                 error):
    with pytest.raises(error) as caught:
        getattr(api, method)(trust.agent_context('h1'), **kwargs)
    assert type(caught.value).__name__ == error.__name__ + '_Remote'
    assert caught.value.kwargs
    assert quota.QUOTAS.list_usages(ctx) == []
    assert attachments.host_reports(ctx) == {}


def test_report_allocations(api, ctx):
    h1, h2 = trust.agent_context('h1'), trust.agent_context('h2')
    api.report_allocations(h1, 'h1', [
        {'project_id': 'p1', 'resource': 'FPGA', 'consumer_id': 'vm1',
         'amount': 1},
        {'project_id': 'p1', 'resource': 'FPGA', 'consumer_id': 'vm2',
         'amount': 2}])
    api.report_allocations(h2, 'h2', [
        {'project_id': 'p1', 'resource': 'FPGA', 'consumer_id': 'vm3',
         'amount': 4}])
    api.report_allocations(h1, 'h1', [
        {'project_id': 'p1', 'resource': 'FPGA', 'consumer_id': 'vm1',
         'amount': 1}])
    assert attachments.reported_usage(ctx) == {('p1', 'FPGA'): 5}
    assert set(attachments.host_reports(ctx)) == {'h1', 'h2'}


@pytest.mark.parametrize('caller', sorted(trust.UNTRUSTED))
def test_an_untrusted_caller_changes_nothing(api, ctx, caller, caplog):
    trust.check_an_untrusted_caller_changes_nothing(api, ctx, caller, caplog)


def test_a_report_about_another_host_is_refused(api, ctx, caplog):
    trust.check_a_report_about_another_host_is_refused(api, ctx, caplog)


def test_the_policy_file_governs_rpc(api, ctx, tmp_path):
    trust.check_the_policy_file_governs_rpc(api, ctx, tmp_path)
