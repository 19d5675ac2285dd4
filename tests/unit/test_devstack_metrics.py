"""The devstack plugin's metrics listener and body limit, against the stub
of devstack's functions (``test_devstack_plugin``)."""

import sys

from tests.unit.test_devstack_plugin import _known_options
from tests.unit.test_devstack_plugin import Devstack
from tests.unit.test_devstack_plugin import STACK


def test_metrics_listener_for_a_scraper(tmp_path):
    """With CYQUOTA_METRICS_LISTEN, [metrics] listen is set and a process
    of its own serves it, summing the directory the uWSGI workers and the
    conductor share; the body limit is configurable."""
    host = Devstack(tmp_path, CYQUOTA_METRICS_LISTEN='10.0.0.5:9180',
                    CYQUOTA_MAX_REQUEST_BODY_SIZE='65536')
    stale = host.metrics_dir / 'counter_4242.db'
    stale.parent.mkdir(parents=True)
    stale.write_text('from the last run')
    host.run(*STACK)
    host.run('unstack')
    calls, conf = host.calls(), host.read_conf()
    assert ('enable_service', 'cyquota-metrics') in calls['settings']
    assert dict(conf['metrics']) == {'listen': '10.0.0.5:9180'}
    assert conf['api']['max_request_body_size'] == '65536'
    assert ('iniset', str(host.uwsgi_conf), 'uwsgi', 'limit-post',
            '65536') in calls['stack post-config']
    assert calls['stack extra'][-1] == (
        'run_process', 'cyquota-metrics',
        '/usr/bin/env PROMETHEUS_MULTIPROC_DIR=%s %s -m '
        'cyquota.api.metrics_listener --config-file %s'
        % (host.metrics_dir, sys.executable, host.conf))
    assert not stale.exists()
    assert calls['unstack'][-1] == ('stop_process', 'cyquota-metrics')
    assert _known_options()['metrics'] >= {'listen'}
