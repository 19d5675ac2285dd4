"""What ``GET /metrics`` shows: the Prometheus text exposition of this
host's cyquota processes.

Without ``PROMETHEUS_MULTIPROC_DIR`` the metrics are this process's own
(``cyquota-api`` with waitress, ``cyquota-all-in-one``). With it, every
process that shares the directory (uWSGI workers, conductors on the same
host) writes its values there and a scrape of any API worker sums them
(prometheus_client's multiprocess mode). Either way the usage gauges are
read from the database at the scrape.
"""

import os

import prometheus_client
from prometheus_client import multiprocess

from cyquota import metrics
from cyquota.metrics import mirror
from cyquota.metrics import usage

#: The exposition's media type.
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST


def text():
    """One scrape, as bytes of ``CONTENT_TYPE``."""
    return prometheus_client.generate_latest(registry())


def registry():
    """The registry one scrape reads."""
    scraped = prometheus_client.CollectorRegistry()
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        multiprocess.MultiProcessCollector(scraped)
    else:
        scraped.register(_Own())
    scraped.register(usage.UsageCollector())
    scraped.register(mirror.MirrorCollector())
    return scraped


class _Own:
    """This process's metrics (``metrics.REGISTRY``) as one collector."""

    def describe(self):
        return []

    def collect(self):
        return metrics.REGISTRY.collect()
