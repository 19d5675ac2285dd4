"""``KeystoneAuth``: the authentication middleware of ``[api]
auth_strategy = keystone`` (keystonemiddleware's auth_token), in a module
of its own so that an API on noauth never imports keystonemiddleware."""

import json

from keystonemiddleware import auth_token
import webob.exc

from cyquota.api import errors


def _detail(refusal):
    """What keystonemiddleware says in a refusal: the message of its
    ``{"error": {...}}`` body, else the exception's detail."""
    try:
        return json.loads(refusal.body)['error']['message']
    except (ValueError, KeyError, TypeError):
        return refusal.detail or refusal.explanation


class KeystoneAuth(auth_token.AuthProtocol):
    """keystonemiddleware's auth_token, except for the version document
    (``GET /``), which clients and deployment tools read before they have
    a token.

    A request with a valid token reaches the app with the identity headers
    (``X-Project-Id``, ``X-User-Id``, ``X-Roles``) set by auth_token; one
    without is refused with 401 and a ``WWW-Authenticate`` header, and
    with 503 when Keystone cannot be reached; both refusals in the API's
    error document (``errors.response_for``), not auth_token's own
    ``{"error": ...}`` or HTML bodies.
    """

    def __init__(self, application, conf):
        super().__init__(application, {'oslo_config_config': conf})
        self._unauthenticated = application

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') in ('', '/'):
            return self._unauthenticated(environ, start_response)
        return super().__call__(environ, start_response)

    def process_request(self, request):
        try:
            return super().process_request(request)
        except webob.exc.HTTPException as refusal:
            response = errors.response_for(
                webob.exc.status_map[refusal.code](detail=_detail(refusal)),
                request.environ)
            response.headers.extend(
                (name, value) for name, value in refusal.headers.items()
                if name.lower() == 'www-authenticate')
            return response
