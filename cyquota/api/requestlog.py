"""WSGI middleware: one INFO line and one latency observation
(``cyquota_api_request_duration_seconds``, by route template) per request,
and the request's id in every log line written while it runs.

A context holding the request id (given by oslo.middleware's RequestId)
becomes the thread's current oslo.context, which oslo.log's formatter
reads. The request line is logged with the caller's identity as the
authentication middleware (inside this one) left it in the environ.

The path and query are the client's, logged before it is authenticated
too: a control character (a ``%0A`` of the path, decoded) is written as
its escape, so it cannot forge a line of its own, and only their first
``MAX_SHOWN`` characters are written, so what the log (and the mask of
its secrets) works on is bounded whatever the client sends.
"""

import time

from oslo_log import log as logging
from oslo_middleware import request_id

from cyquota.api import route_templates
from cyquota import context
from cyquota import metrics

LOG = logging.getLogger(__name__)

# Any other method counts as "other": callers choose the method, and the
# histogram's series must stay bounded.
_METHODS = frozenset(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                      'OPTIONS'])
#: How many characters of a request's path and query the log shows.
MAX_SHOWN = 4096
# C0 and C1 controls and DEL (the latin-1 of a WSGI string holds no
# other line break), each written as its escape.
_ESCAPES = {code: '\\x%02x' % code
            for code in [*range(0x20), *range(0x7f, 0xa0)]}


def shown(path):
    """``path`` as the request log writes it: its first ``MAX_SHOWN``
    characters, control characters escaped."""
    if len(path) > MAX_SHOWN:
        path = '%s...(%d characters)' % (path[:MAX_SHOWN], len(path))
    return path.translate(_ESCAPES)


class RequestLog:
    """Log ``METHOD /path?query status bytes seconds`` after each request."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        started = time.monotonic()
        request = environ.get(request_id.ENV_REQUEST_ID)
        context.RequestContext(request_id=request, overwrite=True)
        seen = {}

        def logging_start_response(status, headers, exc_info=None):
            seen['status'] = status.split(None, 1)[0]
            seen['size'] = next((value for name, value in headers
                                 if name.lower() == 'content-length'), '-')
            return start_response(status, headers, exc_info)

        try:
            return self.application(environ, logging_start_response)
        finally:
            path = environ.get('PATH_INFO', '')
            if environ.get('QUERY_STRING'):
                path += '?' + environ['QUERY_STRING']
            elapsed = time.monotonic() - started
            method = environ.get('REQUEST_METHOD')
            metrics.REQUEST_LATENCY.labels(
                method if method in _METHODS else 'other',
                route_templates.template_of(environ.get('PATH_INFO', '')),
                seen.get('status', '-')).observe(elapsed)
            caller = context.RequestContext.from_environ(
                environ, request_id=request, overwrite=False)
            LOG.info('%s %s %s %s %.4fs', shown(str(method)), shown(path),
                     seen.get('status', '-'), seen.get('size', '-'),
                     elapsed, context=caller)
