"""What a start warns of: an unauthenticated surface that shows more than a
load balancer or a scraper on a management network needs
(``[healthcheck] detailed``, ``[metrics] listen`` off loopback), and which
addresses count as loopback for noauth."""

import logging

import pytest

from cyquota.api import healthcheck
from cyquota.api import metrics_listener
from cyquota.api import noauth
from cyquota.conf import CONF
from cyquota.conf import middleware as middleware_conf


@pytest.fixture
def healthcheck_conf():
    middleware_conf.set_defaults(CONF)
    yield CONF
    for name in ('detailed', 'allowed_source_ranges'):
        CONF.clear_override(name, 'healthcheck')


def _warnings(caplog, module):
    return [record.getMessage() for record in caplog.records
            if record.levelno == logging.WARNING
            and record.name == module.__name__]


@pytest.mark.parametrize('host', ['127.0.0.1', '127.0.0.2', '::1',
                                  'localhost'])
def test_loopback(host):
    assert noauth.is_loopback(host)


@pytest.mark.parametrize('host', ['0.0.0.0', '::', '192.0.2.10',
                                  '2001:db8::1'])
def test_not_loopback(host):
    assert not noauth.is_loopback(host)


def test_a_detailed_healthcheck_open_to_all_is_a_warning(healthcheck_conf,
                                                         caplog):
    CONF.set_override('detailed', True, 'healthcheck')
    healthcheck.warn_if_detailed()
    [warning] = _warnings(caplog, healthcheck)
    assert warning.startswith('[healthcheck] detailed = true: GET '
                              '/healthcheck shows the threads\' stacks')
    assert 'allowed_source_ranges' in warning


@pytest.mark.parametrize('detailed, ranges', [(False, []),
                                              (True, ['10.0.0.0/24'])])
def test_a_plain_or_restricted_healthcheck_is_not(healthcheck_conf, caplog,
                                                  detailed, ranges):
    CONF.set_override('detailed', detailed, 'healthcheck')
    CONF.set_override('allowed_source_ranges', ranges, 'healthcheck')
    healthcheck.warn_if_detailed()
    assert _warnings(caplog, healthcheck) == []


@pytest.mark.parametrize('listen, warned', [
    ('0.0.0.0:9180', True), ('192.0.2.10:9180', True), ('[::]:9180', True),
    ('127.0.0.1:9180', False), ('[::1]:9180', False),
    ('localhost:9180', False)])
def test_a_metrics_listener_off_loopback_is_a_warning(caplog, listen,
                                                      warned):
    CONF.set_override('listen', listen, 'metrics')
    try:
        metrics_listener.warn_if_exposed()
    finally:
        CONF.clear_override('listen', 'metrics')
    expected = ['[metrics] listen = %s serves GET /metrics, every '
                'project\'s usage, without authentication to whoever '
                'reaches that address: keep it on a management network'
                % listen]
    assert _warnings(caplog, metrics_listener) == (expected if warned
                                                   else [])
