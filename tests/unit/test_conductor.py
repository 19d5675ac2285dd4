"""The conductor RPC API on the embedded in-process transport (fake://):
client and conductor in this process, the ledger on SQLite."""

import datetime
import json
import re
import sys
import types

from oslo_messaging._drivers import common as driver_common
import pytest
import sqlalchemy as sa

from cyquota.conductor import rpc
from cyquota.conductor import rpcapi
from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota import quota
from cyquota.quota import attachments
from simulators import agent_sim
from tests import conductor_trust as trust
from tests import fixtures

UUID = '0b4f8a5e-7d1c-4c8e-9a43-5d0e6f1a2b3c'


@pytest.fixture(scope='module')
def _conductor(tmp_path_factory):
    """One conductor serving in this process for the module's tests (its
    periodic expiry only at its start); each test empties the database."""
    url = 'sqlite:///%s' % (tmp_path_factory.mktemp('conductor')
                            / 'cyquota.sqlite')
    fixtures.use_database(url)
    CONF.set_override('expire_interval', 3600, 'conductor')
    conductor = conductor_service.ConductorService(host='unit-conductor')
    conductor.start()
    yield url
    conductor.stop()
    conductor.wait()
    rpc.reset()
    CONF.clear_override('expire_interval', 'conductor')


@pytest.fixture
def api(_conductor):
    fixtures.use_database(_conductor, migrate=False)
    fixtures.clear_tables()
    return rpcapi.ConductorAPI(timeout=30)


def _rows(table):
    with db_api.get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(table)).mappings()]


def _ledger_rows():
    return (_rows(models.QuotaUsage.__table__),
            _rows(models.Reservation.__table__))


def test_reserve_commit_release(api, ctx):
    uuids = api.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1}, consumer_id='vm1')
    assert len(uuids) == 2 and all(isinstance(u, str) for u in uuids)
    usage = api.get_usage(ctx, 'p1')
    assert usage['FPGA'] == {'limit': -1, 'used': 0, 'reserved': 2,
                             'leased': 0, 'promised': 0, 'available': -1}
    assert api.commit(ctx, 'p1', uuids) is None
    assert api.get_usage(ctx, 'p1')['GPU']['used'] == 1
    released = api.release(ctx, 'p1', {'FPGA': 2}, consumer_id='vm1')
    assert len(released) == 1
    usage = api.get_usage(ctx, 'p1')
    assert (usage['FPGA']['used'], usage['GPU']['used']) == (0, 1)


def test_rollback_gives_back(api, ctx):
    uuids = api.reserve(ctx, 'p1', {'FPGA': 3})
    api.rollback(ctx, 'p1', uuids)
    assert api.get_usage(ctx, 'p1')['FPGA']['reserved'] == 0
    # A repeated rollback is answered the same.
    api.rollback(ctx, 'p1', uuids)


def test_request_id_makes_reserve_repeatable(api, ctx):
    first = api.reserve(ctx, 'p1', {'FPGA': 1}, request_id='req-a')
    assert api.reserve(ctx, 'p1', {'FPGA': 1}, request_id='req-a') == first
    assert api.get_usage(ctx, 'p1')['FPGA']['reserved'] == 1
    with pytest.raises(exception.RequestIdConflict) as caught:
        api.reserve(ctx, 'p1', {'FPGA': 2}, request_id='req-a')
    assert caught.value.kwargs['request_id'] == 'req-a'


def test_over_quota_arrives_with_its_overs(api, ctx):
    quota.QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', 3)
    api.commit(ctx, 'p1', api.reserve(ctx, 'p1', {'FPGA': 2}))
    with pytest.raises(exception.OverQuota) as caught:
        api.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1})
    error = caught.value
    assert (error.code, error.kind) == (403, 'over_quota')
    assert error.overs == [{'project_id': 'p1', 'resource': 'FPGA',
                            'scope': 'project', 'limit': 3, 'used': 2,
                            'reserved': 0, 'requested': 2}]
    assert api.get_usage(ctx, 'p1')['GPU']['reserved'] == 0


@pytest.mark.parametrize('method, kwargs, error', [
    ('reserve', dict(project_id='p1', deltas={'TPU': 1}),
     exception.UnknownResource),
    ('reserve', dict(project_id='p1', deltas={'FPGA': 0}),
     exception.InvalidDelta),
    ('reserve', dict(project_id='p1', deltas={'FPGA': '2'}),
     exception.InvalidDelta),
    ('reserve', dict(project_id='p1', deltas=[['FPGA', 1]]),
     exception.Invalid),
    ('reserve', dict(project_id='no spaces', deltas={'FPGA': 1}),
     exception.InvalidProjectId),
    ('reserve', dict(project_id='p1', deltas={'FPGA': 1},
                     expire='tomorrow'), exception.InvalidExpire),
    ('reserve', dict(project_id='p1', deltas={'FPGA': 1},
                     expire='2001-01-01T00:00:00+00:00'),
     exception.InvalidExpire),
    ('reserve', dict(project_id='p1', deltas={'FPGA': 1},
                     expire=datetime.datetime(2099, 1, 1)),
     exception.InvalidExpire),
    ('reserve', dict(project_id='p1', deltas={'FPGA': 1}, expire=-5),
     exception.InvalidExpire),
    ('reserve', dict(project_id='p1', deltas={'FPGA': 1},
                     request_id='has space'), exception.Invalid),
    ('commit', dict(project_id='p1', reservations='abc'),
     exception.InvalidReservationList),
    ('commit', dict(project_id='p1', reservations=[UUID]),
     exception.ReservationNotFound),
    ('rollback', dict(project_id='p1', reservations=[]),
     exception.InvalidReservationList),
    ('release', dict(project_id='p1', deltas={'FPGA': -1}),
     exception.InvalidDelta),
    ('get_usage', dict(project_id=''), exception.InvalidProjectId),
])
def test_bad_input_arrives_as_its_error_and_changes_nothing(
        api, ctx, method, kwargs, error):
    before = _ledger_rows()
    with pytest.raises(error) as caught:
        getattr(api, method)(ctx, **kwargs)
    assert type(caught.value).__name__ == error.__name__
    assert caught.value.code in (400, 404)
    assert _ledger_rows() == before


def test_conflict_arrives_as_its_error(api, ctx):
    uuids = api.reserve(ctx, 'p1', {'FPGA': 1})
    api.commit(ctx, 'p1', uuids)
    api.commit(ctx, 'p1', uuids)  # a repeated commit is a no-op
    with pytest.raises(exception.ReservationConflict) as caught:
        api.rollback(ctx, 'p1', uuids)
    assert caught.value.kwargs == {'action': 'roll back', 'uuid': uuids[0],
                                   'status': 'committed'}


def test_expire_crosses_as_iso_8601_with_its_offset(api, ctx):
    in_two_hours = datetime.datetime.now(datetime.timezone(
        datetime.timedelta(hours=2))) + datetime.timedelta(hours=2)
    api.reserve(ctx, 'p1', {'FPGA': 1}, expire=in_two_hours)
    api.reserve(ctx, 'p1', {'GPU': 1}, expire=600)
    expires = {r['resource']: r['expire']
               for r in _rows(models.Reservation.__table__)}
    utc = in_two_hours.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    assert abs(expires['FPGA'] - utc) < datetime.timedelta(seconds=1)
    assert abs(expires['GPU'] - models.utcnow()
               - datetime.timedelta(seconds=600)) < datetime.timedelta(
        seconds=30)


def test_serializer_carries_the_context():
    serializer = rpc.RequestContextSerializer()
    sent = cyquota_context.RequestContext(user_id='agent', project_id='p1',
                                          roles=['service'], host='host-1')
    wire = json.loads(json.dumps(serializer.serialize_context(sent)))
    received = serializer.deserialize_context(wire)
    assert isinstance(received, cyquota_context.RequestContext)
    assert (received.request_id, received.user_id, received.project_id,
            received.roles, received.is_admin, received.host) == (
        sent.request_id, 'agent', 'p1', ['service'], False, 'host-1')


def _all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


@pytest.mark.parametrize('cls', sorted(
    {exception.CyquotaException, *_all_subclasses(exception.CyquotaException)},
    key=lambda c: c.__name__))
def test_every_quota_error_is_rebuilt_as_itself(cls):
    # What the RabbitMQ driver does with a failure: the same functions.
    overs = [{'project_id': 'p1', 'resource': 'FPGA', 'scope': 'project',
              'limit': 1, 'used': 1, 'reserved': 0, 'requested': 1}]
    if issubclass(cls, exception.OverQuota):
        sent = cls(overs=overs)
    else:
        sent = cls(**{name: 'value-of-%s' % name for name in
                      re.findall(r'%\((\w+)\)', cls.msg_fmt)})
    try:
        raise sent
    except cls:
        wire = driver_common.serialize_remote_exception(sys.exc_info())
    received = driver_common.deserialize_remote_exception(
        wire, rpc.ALLOWED_EXMODS)
    assert isinstance(received, cls)
    assert (received.message, received.kwargs) == (sent.message, sent.kwargs)
    if issubclass(cls, exception.OverQuota):
        assert received.overs == overs


def test_report_allocations(api, ctx):
    agent = trust.agent_context('host-1')
    report = [{'project_id': 'p1', 'resource': 'FPGA', 'consumer_id': 'vm1',
               'amount': 2}]
    assert api.report_allocations(agent, 'host-1', report) is None
    assert attachments.reported_usage(ctx) == {('p1', 'FPGA'): 2}
    with pytest.raises(exception.InvalidAllocation) as caught:
        api.report_allocations(agent, 'host-1', report + [dict(
            report[0], consumer_id='vm2', amount=0)])
    assert 'allocations[1]: amount' in caught.value.message
    with pytest.raises(exception.UnknownResource):
        api.report_allocations(agent, 'host-1', [dict(report[0],
                                                      resource='TPU')])
    assert attachments.reported_consumer_usage(ctx) == {
        ('p1', 'FPGA', 'vm1'): 2}


def _sim_options(**values):
    options = dict(iterations=60, projects=3, project_prefix='sim-',
                   workers=1, resource='FPGA', max_amount=2,
                   attach_failure_rate=0.2, crash_rate=0.1, detach_rate=0.4,
                   expire=600, timeout=30, retry_for=0, release_at_end=False,
                   agent_host='sim-host', seed=7, summary_json=None)
    options.update(values)
    return types.SimpleNamespace(**options)


def test_agent_simulator_counts_match_the_ledger(api, ctx):
    CONF.set_override('default_limit', 4, 'quota')
    options = _sim_options()
    summary = agent_sim.AgentSimulator(api, options).run()
    projects = summary['projects']
    total = sum(p['reserved'] + p['over_quota'] + p['errors']
                for p in projects.values())
    assert total == options.iterations
    assert sum(p['over_quota'] for p in projects.values()) > 0
    for project, counts in projects.items():
        assert counts['errors'] == 0
        assert counts['reserved'] == (counts['attach_failed']
                                      + counts['crashed']
                                      + counts['committed'])
        usage = quota.QUOTAS.get_project_usage(ctx, project)['FPGA']
        assert usage['used'] == counts['held']
        assert usage['used'] + usage['reserved'] <= 4
        # The crashed agents' reservations are all that is still reserved.
        crashed = [r for r in _rows(models.Reservation.__table__)
                   if r['project_id'] == project and r['status'] == 'reserved']
        assert len(crashed) == counts['crashed']
        assert usage['reserved'] == sum(r['delta'] for r in crashed)
    assert attachments.reported_usage(ctx) == {
        (p, 'FPGA'): c['held'] for p, c in projects.items() if c['held']}
    text = agent_sim.format_summary(summary)
    assert text.splitlines()[1].split('|')[1].strip() == 'Project'
    assert '| total ' in text


@pytest.mark.parametrize('caller', sorted(trust.UNTRUSTED))
def test_an_untrusted_caller_changes_nothing(api, ctx, caller, caplog):
    trust.check_an_untrusted_caller_changes_nothing(api, ctx, caller, caplog)


def test_a_report_about_another_host_is_refused(api, ctx, caplog):
    trust.check_a_report_about_another_host_is_refused(api, ctx, caplog)


def test_the_policy_file_governs_rpc(api, ctx, tmp_path):
    trust.check_the_policy_file_governs_rpc(api, ctx, tmp_path)
