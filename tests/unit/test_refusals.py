"""The refusals log on SQLite: a reserve for a consumer refused over quota
is recorded after the refused transaction, notified with its consumer and
request ids, listed by consumer and project, and purged with the ended
reservations; a record that cannot be written leaves the refusal as it
was."""

from oslo_messaging.notify import _impl_test
import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota import exception
from cyquota import notifications
from cyquota.quota import QUOTAS
from cyquota.quota import refusals
from tests.unit import test_engine
from tests.unit.test_engine import clock, limit  # noqa: F401 H301

OVER = {'project_id': 'p1', 'resource': 'FPGA', 'scope': 'project',
        'limit': 1, 'used': 0, 'reserved': 0, 'requested': 2}


@pytest.fixture
def db(sqlite_db, clock):  # noqa: F811
    return clock


@pytest.fixture
def notified():
    """The notifications sent, through oslo.messaging's test driver."""
    notifications.get_notifier()  # registers the notifier's options
    CONF.set_override('driver', ['test'], 'oslo_messaging_notifications')
    notifications.reset()
    _impl_test.reset()
    yield _impl_test.NOTIFICATIONS
    notifications.reset()
    CONF.clear_override('driver', 'oslo_messaging_notifications')


def _refuse(ctx, **kwargs):
    with pytest.raises(exception.OverQuota):
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}, **kwargs)


def test_a_refused_bind_is_recorded_and_notified(db, notified):
    ctx = cyquota_context.RequestContext(user_id='u1', project_id='svc',
                                         roles=['service'])
    limit(ctx, 'FPGA', 1)
    _refuse(ctx, consumer_id='vm-1', request_id='arq-1')
    [found] = QUOTAS.list_refusals(ctx, consumer_id='vm-1')
    assert found['created_at'] == test_engine.START
    assert {key: found[key] for key in (
        'project_id', 'consumer_id', 'request_id', 'user_id', 'overs')} == {
        'project_id': 'p1', 'consumer_id': 'vm-1', 'request_id': 'arq-1',
        'user_id': 'u1', 'overs': [OVER]}
    [(_, message, _, _)] = notified
    payload = message['payload']
    assert (message['event_type'], message['priority']) == (
        'accelerator.quota.over_quota', 'WARN')
    assert payload['cyquota_object.version'] == '1.1'
    assert payload['cyquota_object.data'] == {
        'project_id': 'p1', 'action': 'reserve', 'consumer_id': 'vm-1',
        'request_id': 'arq-1', 'overs': [OVER]}


def test_no_record_without_a_consumer_or_in_a_dry_run(db, ctx, notified):
    limit(ctx, 'FPGA', 1)
    _refuse(ctx, request_id='arq-1')
    _refuse(ctx, consumer_id='vm-1', dry_run=True)
    assert QUOTAS.list_refusals(ctx) == []
    [(_, message, _, _)] = notified
    data = message['payload']['cyquota_object.data']
    assert (data['consumer_id'], data['request_id']) == (None, 'arq-1')


def test_a_record_that_cannot_be_written_leaves_the_refusal(db, ctx,
                                                            caplog):
    limit(ctx, 'FPGA', 1)
    with db_api.get_engine().begin() as conn:
        conn.execute(sa.text('DROP TABLE refusals'))
    _refuse(ctx, consumer_id='vm-1')
    assert 'Refusal of consumer vm-1 in project p1 over quota not ' \
        'recorded' in caplog.text


def test_listed_newest_first_by_consumer_and_project(db, ctx):
    limit(ctx, 'FPGA', 1)
    limit(ctx, 'FPGA', 1, project='p2')
    for consumer in ('vm-1', 'vm-2', 'vm-1'):
        _refuse(ctx, consumer_id=consumer)
    with pytest.raises(exception.OverQuota):
        QUOTAS.reserve(ctx, 'p2', {'FPGA': 2}, consumer_id='vm-1')
    every = QUOTAS.list_refusals(ctx)
    assert [(r['project_id'], r['consumer_id']) for r in every] == [
        ('p2', 'vm-1'), ('p1', 'vm-1'), ('p1', 'vm-2'), ('p1', 'vm-1')]
    assert every == sorted(every, key=lambda r: r['created_at'],
                           reverse=True)
    mine = QUOTAS.list_refusals(ctx, project_id='p1', consumer_id='vm-1')
    assert [r['id'] for r in mine] == [every[1]['id'], every[3]['id']]
    page = QUOTAS.list_refusals(ctx, project_id='p1', limit=1,
                                marker=every[1]['id'])
    assert [r['id'] for r in page] == [every[2]['id']]
    # A marker of another project is none of this listing's.
    with pytest.raises(exception.InvalidQuery):
        QUOTAS.list_refusals(ctx, project_id='p1', marker=every[0]['id'])
    with pytest.raises(exception.Invalid):
        QUOTAS.list_refusals(ctx, consumer_id='vm 1')


def test_purged_after_the_reservations_retention(db, ctx):
    limit(ctx, 'FPGA', 1)
    _refuse(ctx, consumer_id='vm-1')
    db.advance(CONF.quota.reservation_retention - 1)
    assert QUOTAS.purge(ctx) == 0
    _refuse(ctx, consumer_id='vm-2')
    db.advance(2)
    assert QUOTAS.purge(ctx) == 1
    assert [r['consumer_id'] for r in refusals.list_refusals(ctx)] == [
        'vm-2']
