"""``[api] max_request_body_size``: a larger request body is refused with
413, in the API's error document, before it is read, on every route.

Two pieces, because a WSGI server may read the body before the app runs:

* :class:`BodyLimit`, WSGI middleware around every route (``/healthcheck``
  and ``/metrics`` included): 413 for a ``Content-Length`` above the limit
  without reading the body; a chunked body is read only up to one byte
  past the limit.
* :func:`create_server`, waitress for cyquota-api: waitress buffers a whole
  body before it calls the app, so it is given the limit itself (it stops
  receiving once a body is past it, announced or chunked), and the request
  it refuses is answered by the app's pipeline, flagged as refused, so the
  413 carries the error document, the request id and the log line. The
  connection is then closed: the rest of the body is never read.

Under uWSGI, ``limit-post`` plays waitress's part (devstack sets it).
"""

import io

from waitress import channel
from waitress import server as waitress_server
from waitress import task
from waitress import utilities

from cyquota.api import errors
from cyquota.conf import CONF
from cyquota import exception

#: Set in the environ of a request whose body the server refused.
REFUSED = 'cyquota.body_refused'


class BodyLimit:
    """Refuse bodies larger than ``[api] max_request_body_size`` (413)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        try:
            _check(environ, CONF.api.max_request_body_size)
        except exception.CyquotaException as error:
            return errors.response_for(error, environ)(environ,
                                                       start_response)
        return self.application(environ, start_response)


def _too_large(limit, size=None):
    return exception.RequestTooLarge(
        size=size if size is not None else 'more than %d' % limit,
        limit=limit)


def _check(environ, limit):
    """Raise RequestTooLarge for a body past ``limit``; a chunked body
    within it is left read into ``wsgi.input`` with its length set."""
    length = environ.get('CONTENT_LENGTH')
    if length:
        try:
            length = int(length)
        except ValueError:
            raise exception.InvalidBody(
                detail='Content-Length %r is not a number of bytes' % length)
        if length > limit:
            raise _too_large(limit, length)
    if environ.get(REFUSED):
        raise _too_large(limit)
    chunked = environ.get('HTTP_TRANSFER_ENCODING', '').lower()
    if not length and 'chunked' in chunked:
        body = environ['wsgi.input'].read(limit + 1)
        if len(body) > limit:
            raise _too_large(limit)
        environ['wsgi.input'] = io.BytesIO(body)
        environ['CONTENT_LENGTH'] = str(len(body))


class _RefusedBodyTask(task.WSGITask):
    """A request whose body waitress refused: the app answers it with an
    empty body and the ``REFUSED`` flag, then the connection closes."""

    def get_environment(self):
        environ = super().get_environment()
        environ[REFUSED] = True
        environ['wsgi.input'] = io.BytesIO()
        return environ

    def execute(self):
        self.set_close_on_finish()
        super().execute()


def _error_task(http_channel, request):
    if isinstance(request.error, utilities.RequestEntityTooLarge):
        return _RefusedBodyTask(http_channel, request)
    return task.ErrorTask(http_channel, request)


class _Channel(channel.HTTPChannel):
    error_task_class = staticmethod(_error_task)


def create_server(application, **adjustments):
    """``waitress.create_server`` refusing bodies past ``[api]
    max_request_body_size`` as the app does (``adjustments`` as waitress
    takes them)."""
    servers = {}
    # waitress refuses a body of max_request_body_size bytes or more.
    created = waitress_server.create_server(
        application, map=servers,
        max_request_body_size=CONF.api.max_request_body_size + 1,
        **adjustments)
    for dispatcher in servers.values():
        if isinstance(dispatcher, waitress_server.BaseWSGIServer):
            dispatcher.channel_class = _Channel
    return created
