"""Pecan hooks: per-request context, media type, error rendering (the
body size is ``bodylimit.BodyLimit``'s, before any route)."""

from oslo_middleware import request_id
import pecan

from cyquota.api import errors
from cyquota.api import validation
from cyquota import context
from cyquota import exception


# Media types pecan would parse as a form.
_FORMS = ('multipart/form-data', 'application/x-www-form-urlencoded')
# The methods whose body the API reads.
_WITH_BODY = frozenset(['POST', 'PUT', 'PATCH'])


class ContextHook(pecan.hooks.PecanHook):
    """Build ``pecan.request.context``, a cyquota RequestContext.

    The identity comes from the ``X-Project-Id``, ``X-User-Id`` and
    ``X-Roles`` headers: trusted as sent under ``[api] auth_strategy =
    noauth``, set by keystonemiddleware under ``keystone``. The request id
    is the one oslo.middleware's RequestId gave the request.
    """

    def before(self, state):
        environ = state.request.environ
        request_context = context.RequestContext.from_environ(
            environ,
            request_id=environ.get(request_id.ENV_REQUEST_ID),
            global_request_id=environ.get(request_id.GLOBAL_REQ_ID),
            overwrite=False)
        request_context.is_admin = 'admin' in request_context.roles
        state.request.context = request_context


class MediaTypeHook(pecan.hooks.PecanHook):
    """Before routing, where pecan parses a form body (and fails with a 500
    on a malformed one, multipart without a boundary, say) or decodes a JSON
    body: refuse a form media type on any method, and JSON nested too
    deeply, with 400; a body of another media type with 415.

    This runs before any policy check (and, under keystone, on ``GET /``
    without a token), so it costs time linear in the body, and only a
    method that takes a body has its body read: the body of a GET, HEAD,
    DELETE or OPTIONS is dropped unread.
    """

    priority = 20

    def on_route(self, state):
        request = state.request
        if request.content_type in _FORMS:
            raise exception.InvalidBody(
                detail='Form bodies (%s) are not accepted: send '
                       'application/json' % request.content_type)
        if request.method not in _WITH_BODY:
            if request.content_length:
                request.body = b''
            return
        if request.content_length and \
                request.content_type != 'application/json':
            raise exception.UnsupportedMediaType(
                media_type=request.content_type or 'None')
        if request.content_length:
            validation.check_depth(request.body)


class ErrorHook(pecan.hooks.PecanHook):
    """Render every error of the request (routing included) as the API's
    JSON error document (``errors.response_for``)."""

    def on_error(self, state, error):
        return errors.response_for(error, state.request.environ)
