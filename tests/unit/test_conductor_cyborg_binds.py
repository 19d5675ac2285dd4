"""The conductor settles the binds that Cyborg finished after answering:
reserved rows of request id ``arq-<uuid>``, read from a stand-in for
Cyborg's API served on 127.0.0.1 through the ``[cyborg]`` options."""

import pytest

from cyquota.conductor import cyborg_binds
from cyquota.conf import CONF
from cyquota import quota
from tests import cyborg_standin
from tests import enforcement_helpers
from tests.unit import test_conductor_service


@pytest.fixture
def cyborg():
    standin = cyborg_standin.CyborgStandIn()
    standin.add_profile('fpga-dp', [{'resources:FPGA': '1'}])
    server = enforcement_helpers.serve_wsgi(standin)
    CONF.set_override('auth_type', 'none', 'cyborg')
    CONF.set_override('endpoint_override', server.url + '/v2', 'cyborg')
    yield standin
    CONF.clear_override('auth_type', 'cyborg')
    CONF.clear_override('endpoint_override', 'cyborg')
    server.stop()


def _bind_reserved(ctx, cyborg, state):
    """An ARQ in ``state`` whose bind holds a reservation; its uuid."""
    arq = cyborg.add_arq('fpga-dp', 'p1')
    cyborg.arqs[arq]['state'] = state
    quota.QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, request_id='arq-' + arq,
                         consumer_id='instance-1')
    return arq


def _statuses(ctx):
    return {row['request_id']: row['status']
            for row in quota.QUOTAS.list_reservations(ctx)}


def test_each_bind_follows_its_arq(sqlite_db, ctx, cyborg):
    bound = _bind_reserved(ctx, cyborg, 'Bound')
    failed = _bind_reserved(ctx, cyborg, 'BindFailed')
    unbound = _bind_reserved(ctx, cyborg, 'Unbound')
    started = _bind_reserved(ctx, cyborg, 'BindStarted')
    gone = _bind_reserved(ctx, cyborg, 'Bound')
    del cyborg.arqs[gone]
    quota.QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, request_id='other')
    done = cyborg_binds.resolve(ctx, cyborg_binds.load_reader(CONF))
    assert done == {'commit': 1, 'rollback': 3, 'wait': 1}
    assert _statuses(ctx) == {
        'arq-' + bound: 'committed', 'arq-' + failed: 'rolled_back',
        'arq-' + unbound: 'rolled_back', 'arq-' + gone: 'rolled_back',
        'arq-' + started: 'reserved', 'other': 'reserved'}
    assert quota.QUOTAS.get_project_usage(ctx, 'p1')['FPGA']['used'] == 1


def test_cyborg_away_leaves_everything_reserved(sqlite_db, ctx, caplog):
    CONF.set_override('auth_type', 'none', 'cyborg')
    CONF.set_override('endpoint_override', 'http://127.0.0.1:1/v2',
                      'cyborg')
    try:
        quota.QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, request_id='arq-x')
        assert cyborg_binds.resolve(
            ctx, cyborg_binds.load_reader(CONF)) == {}
    finally:
        CONF.clear_override('auth_type', 'cyborg')
        CONF.clear_override('endpoint_override', 'cyborg')
    assert _statuses(ctx) == {'arq-x': 'reserved'}
    assert 'Cannot read Cyborg' in caplog.text


def test_the_conductor_runs_it_when_cyborg_is_configured(sqlite_db, ctx,
                                                         cyborg):
    CONF.set_override('bind_check_interval', 1, 'cyborg')
    arq = _bind_reserved(ctx, cyborg, 'Bound')
    try:
        test_conductor_service.run_conductor_until(
            lambda: _statuses(ctx)['arq-' + arq] != 'reserved')
    finally:
        CONF.clear_override('bind_check_interval', 'cyborg')
    assert _statuses(ctx)['arq-' + arq] == 'committed'
