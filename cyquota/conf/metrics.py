"""[metrics] options: the Prometheus endpoint ``GET /metrics``."""

from oslo_config import cfg

metrics_group = cfg.OptGroup(
    'metrics', title='Prometheus metrics',
    help='The Prometheus text exposition served at GET /metrics '
         '(doc/metrics.rst).')

metrics_opts = [
    cfg.BoolOpt(
        'enabled', default=True,
        help='Serve GET /metrics (without authentication, like '
             '/healthcheck: restrict it at the proxy or firewall).'),
    cfg.IntOpt(
        'usage_projects', default=100, min=0,
        help='Projects whose usage gauges are exported one by one: the '
             'ones holding the most (used + reserved + promised, summed '
             'over resources); the usage of every other project is summed '
             'under project_id="_other", so the number of series stays '
             'bounded whatever the number of projects.'),
]


def register_opts(conf):
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {metrics_group: metrics_opts}
