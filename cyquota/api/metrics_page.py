"""``GET /metrics`` as the API port and the ``[metrics] listen`` listener
serve it: the counters (``cyquota.metrics``) and the gauges read from the
database at the scrape, the books (``usage_gauges``), the Placement
mirror (``mirror_gauges``) and the periodic witness (``witness_gauges``).

The listener, which anyone on its network may scrape, serves a
:class:`SharedPage`: one page rendered at a time and reused for ``[metrics]
listen_cache_time`` seconds, so that scrapers cannot make the process read
every usage row over and over.
"""

import threading
import time

import prometheus_client
import webob

from cyquota.api import errors
from cyquota.api import mirror_gauges
from cyquota.api import usage_gauges
from cyquota.api import witness_gauges
from cyquota.conf import CONF
from cyquota.metrics import exposition


def _gauges() -> tuple[usage_gauges.UsageCollector,
                       mirror_gauges.MirrorCollector,
                       witness_gauges.WitnessCollector]:
    return (usage_gauges.UsageCollector(), mirror_gauges.MirrorCollector(),
            witness_gauges.WitnessCollector())


def registry() -> prometheus_client.CollectorRegistry:
    """The registry one scrape reads."""
    return exposition.registry(*_gauges())


def render() -> bytes:
    """One scrape's page."""
    return exposition.text(*_gauges())


def response(environ: dict, page=render) -> webob.Response:
    """``page()`` (default: a scrape) as a response; a scrape that fails
    (the database away, say) is logged and answered with the API's error
    document."""
    try:
        body = page()
    except Exception as error:  # logged by the error document, a 500
        return errors.response_for(error, environ)
    answer = webob.Response(body=body)
    answer.headers['Content-Type'] = exposition.CONTENT_TYPE
    return answer


class SharedPage:
    """A page rendered by one scrape at a time and reused by every scrape
    for ``[metrics] listen_cache_time`` seconds after it was rendered.

    Scrapers that arrive while a page is being rendered wait for it and
    get it; a failed scrape is not kept.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._body = None
        self._rendered_at = None

    def __call__(self) -> bytes:
        with self._lock:
            ttl = CONF.metrics.listen_cache_time
            if (self._body is None
                    or time.monotonic() - self._rendered_at >= ttl):
                self._body = render()
                self._rendered_at = time.monotonic()
            return self._body
