"""``GET /metrics`` as the API port and the ``[metrics] listen`` listener
serve it: the counters (``cyquota.metrics``) and the gauges read from the
database at the scrape, the books (``usage_gauges``) and the Placement
mirror (``mirror_gauges``)."""

import prometheus_client
import webob

from cyquota.api import errors
from cyquota.api import mirror_gauges
from cyquota.api import usage_gauges
from cyquota.metrics import exposition


def _gauges() -> tuple[usage_gauges.UsageCollector,
                       mirror_gauges.MirrorCollector]:
    return usage_gauges.UsageCollector(), mirror_gauges.MirrorCollector()


def registry() -> prometheus_client.CollectorRegistry:
    """The registry one scrape reads."""
    return exposition.registry(*_gauges())


def response(environ: dict) -> webob.Response:
    """One scrape as a response; a scrape that fails (the database away,
    say) is logged and answered with the API's error document."""
    try:
        body = exposition.text(*_gauges())
    except Exception as error:  # logged by the error document, a 500
        return errors.response_for(error, environ)
    page = webob.Response(body=body)
    page.headers['Content-Type'] = exposition.CONTENT_TYPE
    return page
