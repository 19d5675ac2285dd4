"""The ``[metrics] listen`` listener against many scrapers and idle
connections: a real listener on 127.0.0.1 in this process, over the real
PostgreSQL, with real sockets (a bounded number, closed at the end).

Idle connections cost no thread each and are closed; parallel scrapes read
the usage rows once, and share the page they read."""

import concurrent.futures
import threading

import pytest
import requests
from sqlalchemy import event

from cyquota.api import metrics_listener
from cyquota.api import metrics_page
from cyquota import conf
from cyquota.db import api as db_api
from cyquota import quota
from servers import api_server
from tests.functional import idle_sockets

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.parametrize('backend', ['postgresql'],
                                      indirect=True)]


@pytest.fixture
def listener(backend, ctx, monkeypatch):
    """The listener's URL, serving from this process with a cold page."""
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 10)
    for number in range(20):
        quota.QUOTAS.reserve(ctx, 'p%02d' % number, {'FPGA': 1})
    monkeypatch.setattr(metrics_listener, '_PAGE',
                        metrics_page.SharedPage())
    listen = '127.0.0.1:%d' % api_server.free_port()
    conf.CONF.set_override('listen', listen, 'metrics')
    server = metrics_listener.serve_in_thread(metrics_listener.listening())
    try:
        yield 'http://%s/metrics' % listen
    finally:
        server.task_dispatcher.shutdown()
        server.close()
        conf.CONF.clear_override('listen', 'metrics')
        conf.CONF.clear_override('listen_cache_time', 'metrics')


class _Statements:
    """The statements cyquota's engine runs while in the block."""

    def __init__(self):
        self.count = 0

    def _count(self, *args):
        self.count += 1

    def __enter__(self):
        event.listen(db_api.get_engine(), 'before_cursor_execute',
                     self._count)
        return self

    def __exit__(self, *exc_info):
        event.remove(db_api.get_engine(), 'before_cursor_execute',
                     self._count)


def _scrape(url):
    answer = requests.get(url, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_parallel_scrapes_read_the_books_once(listener):
    with _Statements() as one:
        page = metrics_page.render().decode()
    assert one.count > 0 and 'cyquota_quota_reserved' in page
    with _Statements() as six:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            pages = list(pool.map(_scrape, [listener] * 6))
    # One scrape read the rows; the five that came during it got its page.
    assert six.count == one.count
    assert len(set(pages)) == 1
    with _Statements() as cached:
        assert _scrape(listener) == pages[0]
    assert cached.count == 0
    # Read anew once listen_cache_time has passed (here at once).
    conf.CONF.set_override('listen_cache_time', 0, 'metrics')
    with _Statements() as fresh:
        _scrape(listener)
    assert fresh.count == one.count


def test_idle_connections_hold_no_thread_and_are_closed(listener):
    host, port = listener.split('/')[2].split(':')
    before = threading.active_count()
    with idle_sockets.idle_connections(int(port), 30, host) as idle:
        # Served after the idle ones before it in the queue: every one of
        # them has been accepted (or dropped) by then.
        assert 'cyquota_quota_used' in _scrape(listener)
        assert threading.active_count() - before <= 2
        assert idle_sockets.all_closed_by_the_server(idle, 60)
