"""[metrics] options: the Prometheus exposition, on the API port
(``GET /metrics``, policy ``cyquota:metrics:get``) and on a listener of
its own (``listen``)."""

from oslo_config import cfg
from oslo_config import types

metrics_group = cfg.OptGroup(
    'metrics', title='Prometheus metrics',
    help='The Prometheus text exposition (doc/source/metrics.rst).')


class ListenAddress(types.String):
    """``HOST:PORT`` (an IPv6 host in brackets: ``[::1]:9180``); the value
    is kept as written, :func:`split` gives its parts."""

    _HOST = types.HostAddress()
    _PORT = types.Port()

    def __init__(self):
        super().__init__(type_name='host:port value')

    def __call__(self, value):
        value = super().__call__(value)
        split(value)
        return value


def split(value):
    """``(host, port)`` of a ``HOST:PORT`` value; ValueError naming what is
    wrong with it."""
    host, colon, port = value.rpartition(':')
    if not colon or not host:
        raise ValueError('%r is not HOST:PORT' % value)
    if host.startswith('[') and host.endswith(']'):
        host = host[1:-1]
    return ListenAddress._HOST(host), ListenAddress._PORT(port)


metrics_opts = [
    cfg.BoolOpt(
        'enabled', default=True,
        help='Serve GET /metrics on the API port, to callers that policy '
             'cyquota:metrics:get allows (default: the admin or service '
             'role).'),
    cfg.Opt(
        'listen', type=ListenAddress(), default=None,
        sample_default='127.0.0.1:9180',
        help='HOST:PORT of a listener of its own serving GET /metrics '
             'without authentication, for a Prometheus scraper; meant for '
             'a management network (an address that is not loopback is '
             'logged as a WARNING at start: whoever reaches it reads every '
             'project\'s usage). Served by cyquota-api (the counts of '
             'every worker summed) and cyquota-all-in-one, with 2 threads, '
             'at most 20 connections open and an idle one closed after 10 '
             's. Default: no such listener.'),
    cfg.IntOpt(
        'listen_cache_time', default=5, min=0,
        help='Seconds a page of the [metrics] listen listener is served '
             'again to every scrape before the database is read anew. One '
             'page is rendered at a time (each reads every usage row), '
             'whatever the number of scrapers: scrapes that arrive during '
             'one wait for its page. 0 renders a page for each scrape, '
             'still one at a time. Keep it below the scrape interval.'),
    cfg.IntOpt(
        'usage_projects', default=100, min=0,
        help='Projects whose usage gauges are exported one by one: the '
             'ones holding the most (used + reserved + promised, summed '
             'over resources). The usage of every other project is summed '
             'into series without a project_id label (projects="others"), '
             'so the number of series stays bounded whatever the number '
             'of projects, and no project id can be mistaken for them.'),
]


def register_opts(conf):
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {metrics_group: metrics_opts}
