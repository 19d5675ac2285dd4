"""Attachment reports of the agents (cyquota.quota.attachments) on SQLite."""

import pytest

from cyquota.db import models
from cyquota import exception
from cyquota.quota import attachments


def _item(**values):
    item = {'project_id': 'p1', 'resource': 'FPGA', 'consumer_id': 'vm1',
            'amount': 1}
    item.update(values)
    return item


def test_latest_report_of_each_host_counts(sqlite_db, ctx):
    attachments.record_report(ctx, 'h1', [
        _item(), _item(consumer_id='vm2', amount=2),
        _item(project_id='p2', resource='GPU', consumer_id='vm3')])
    attachments.record_report(ctx, 'h2', [_item(consumer_id='vm4',
                                                amount=4)])
    assert attachments.reported_usage(ctx) == {
        ('p1', 'FPGA'): 7, ('p2', 'GPU'): 1}
    attachments.record_report(ctx, 'h1', [_item(amount=3)])
    assert attachments.reported_usage(ctx) == {('p1', 'FPGA'): 7}
    assert attachments.reported_consumer_usage(ctx) == {
        ('p1', 'FPGA', 'vm1'): 3, ('p1', 'FPGA', 'vm4'): 4}
    assert attachments.reported_usage(ctx, project_id='p2') == {}
    attachments.record_report(ctx, 'h2', [])
    assert attachments.reported_consumer_usage(ctx, project_id='p1') == {
        ('p1', 'FPGA', 'vm1'): 3}
    reported = attachments.host_reports(ctx)
    assert set(reported) == {'h1', 'h2'}
    assert all(at <= models.utcnow() for at in reported.values())


def test_same_consumer_on_two_hosts_adds_up(sqlite_db, ctx):
    attachments.record_report(ctx, 'h1', [_item(amount=1)])
    attachments.record_report(ctx, 'h2', [_item(amount=2)])
    assert attachments.reported_consumer_usage(ctx) == {
        ('p1', 'FPGA', 'vm1'): 3}


@pytest.mark.parametrize('host, allocations, error, words', [
    ('', [], exception.InvalidAllocation, 'host must be'),
    ('h 1', [], exception.InvalidAllocation, 'host must be'),
    (None, [], exception.InvalidAllocation, 'host must be'),
    ('h1', {'p1': 1}, exception.InvalidAllocation, 'must be a list'),
    ('h1', ['vm1'], exception.InvalidAllocation, 'allocations[0]: expected'),
    ('h1', [_item(), {'project_id': 'p1'}], exception.InvalidAllocation,
     "allocations[1]: missing ['resource', 'consumer_id', 'amount']"),
    ('h1', [_item(extra=1)], exception.InvalidAllocation,
     "unknown ['extra']"),
    ('h1', [_item(project_id='p 1')], exception.InvalidProjectId,
     'allocations[0]: Invalid project id'),
    ('h1', [_item(resource='TPU')], exception.UnknownResource,
     "allocations[0]: Unknown resource 'TPU'"),
    ('h1', [_item(consumer_id='')], exception.InvalidAllocation,
     'consumer_id must be'),
    ('h1', [_item(consumer_id=7)], exception.InvalidAllocation,
     'consumer_id must be'),
    ('h1', [_item(amount=0)], exception.InvalidAllocation,
     'amount must be an integer from 1'),
    ('h1', [_item(amount=True)], exception.InvalidAllocation, 'amount'),
    ('h1', [_item(amount=1.5)], exception.InvalidAllocation, 'amount'),
    ('h1', [_item(amount=2 ** 31)], exception.InvalidAllocation, 'amount'),
    ('h1', [_item(), _item(amount=2)], exception.InvalidAllocation,
     'allocations[1]: consumer vm1 has FPGA twice'),
    ('h1', [_item(consumer_id='c%d' % n)
            for n in range(attachments.MAX_REPORT_ITEMS + 1)],
     exception.InvalidAllocation, 'more than the 10000'),
])
def test_bad_report_changes_nothing(sqlite_db, ctx, host, allocations,
                                    error, words):
    attachments.record_report(ctx, 'h1', [_item(consumer_id='before')])
    with pytest.raises(error) as caught:
        attachments.record_report(ctx, host, allocations)
    assert type(caught.value) is error
    assert caught.value.code == 400
    assert words in caught.value.message
    assert attachments.reported_consumer_usage(ctx) == {
        ('p1', 'FPGA', 'before'): 1}
    assert set(attachments.host_reports(ctx)) == {'h1'}
