"""The Prometheus text exposition of this host's cyquota processes, with
the gauges the caller reads at the scrape (``cyquota.api.metrics_page``
adds the books and the Placement mirror).

Without ``PROMETHEUS_MULTIPROC_DIR`` the counters are this process's own
(``cyquota-api`` with waitress, ``cyquota-all-in-one``). With it, every
process that shares the directory (uWSGI workers, conductors on the same
host) writes its values there and a scrape of any API worker sums them
(prometheus_client's multiprocess mode).
"""

import os

import prometheus_client
from prometheus_client import multiprocess
from prometheus_client import registry as prometheus_registry

from cyquota import metrics

#: The exposition's media type.
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST


def text(*gauges: prometheus_registry.Collector) -> bytes:
    """One scrape, as bytes of ``CONTENT_TYPE``."""
    return prometheus_client.generate_latest(registry(*gauges))


def registry(
        *gauges: prometheus_registry.Collector
) -> prometheus_client.CollectorRegistry:
    """The registry one scrape reads: the counters, then ``gauges``
    (collectors that read their values at the scrape)."""
    scraped = prometheus_client.CollectorRegistry()
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        multiprocess.MultiProcessCollector(scraped)
    else:
        scraped.register(_Own())
    for gauge in gauges:
        scraped.register(gauge)
    return scraped


class _Own:
    """This process's metrics (``metrics.REGISTRY``) as one collector."""

    def describe(self):
        return []

    def collect(self):
        return metrics.REGISTRY.collect()
