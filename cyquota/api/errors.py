"""Error documents: every error the API returns, in one form.

``{"errors": [{"status": N, "code": "cyquota.<kind>", "title": "...",
"detail": "...", "request_id": "req-..."}]}``; an over-quota error also
carries its ``overs``. Cyquota exceptions, pecan's routing errors (404,
405), webob HTTP errors and wsme client errors all render here; anything
else is logged and becomes a 500 that reveals nothing internal.
"""

import json

from oslo_log import log as logging
from oslo_middleware import request_id as request_id_middleware
import webob
import webob.exc
import wsme.exc

from cyquota import exception

LOG = logging.getLogger(__name__)


def _kind_of_title(title):
    return title.lower().replace(' ', '_').replace('-', '_')


def document(status, kind, title, detail, request_id=None, **extra):
    """The error body for one error."""
    error = {'status': status, 'code': 'cyquota.%s' % kind, 'title': title,
             'detail': detail, 'request_id': request_id}
    error.update(extra)
    return {'errors': [error]}


def response_for(error, environ):
    """A webob Response rendering ``error`` (any exception)."""
    if isinstance(error, exception.CyquotaException):
        status, kind, title = error.code, error.kind, error.title
        detail = error.message
        extra = {'overs': error.overs} if hasattr(error, 'overs') else {}
    elif isinstance(error, webob.exc.HTTPException):
        status, title = error.code, error.title
        kind = _kind_of_title(title)
        detail = error.detail or error.explanation
        if isinstance(error, webob.exc.HTTPMethodNotAllowed):
            detail = 'The method %s is not allowed for this resource.' % (
                environ.get('REQUEST_METHOD'))
        extra = {}
    elif isinstance(error, wsme.exc.ClientSideError):
        status, kind, title = error.code, 'invalid', 'Bad Request'
        detail, extra = error.faultstring, {}
    elif isinstance(error, UnicodeDecodeError):
        status, kind, title = 400, 'invalid', 'Bad Request'
        detail, extra = 'The request is not valid UTF-8: %s' % error, {}
    else:
        LOG.exception('Unexpected error in the API')
        status, kind, title = 500, 'internal_error', 'Internal Server Error'
        detail, extra = 'An unexpected error occurred.', {}
    body = document(status, kind, title, detail,
                    environ.get(request_id_middleware.ENV_REQUEST_ID),
                    **extra)
    response = webob.Response(status=status, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps(body)
    return response
