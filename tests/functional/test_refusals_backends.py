"""The refusals log on PostgreSQL and MariaDB: a bind refused over quota
by the ledger's one statement is recorded after it, found by consumer and
project, and purged with the ended reservations."""

import datetime

from oslo_utils import timeutils
import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota.quota import QUOTAS

VM = '0b8ac5a6-5f3c-4ad4-a8b8-6e1b3e4f7c21'


def test_recorded_found_and_purged(backend, ctx, monkeypatch):
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', 1)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1},
                                            consumer_id='vm-0'))
    with pytest.raises(exception.OverQuota):
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id=VM,
                       request_id='arq-1')
    [found] = QUOTAS.list_refusals(ctx, project_id='p1', consumer_id=VM)
    assert (found['request_id'], found['overs']) == ('arq-1', [{
        'project_id': 'p1', 'resource': 'FPGA', 'scope': 'project',
        'limit': 1, 'used': 1, 'reserved': 0, 'requested': 1}])
    # The refusal changed nothing in the books.
    assert QUOTAS.get_project_usage(ctx, 'p1')['FPGA']['reserved'] == 0

    later = timeutils.utcnow() + datetime.timedelta(
        seconds=CONF.quota.reservation_retention + 1)
    monkeypatch.setattr(timeutils, 'utcnow', lambda *args, **kw: later)
    QUOTAS.purge(ctx)
    assert QUOTAS.list_refusals(ctx) == []
