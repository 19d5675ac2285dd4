"""Authentication middleware for ``[api] auth_strategy = keystone``."""

from keystonemiddleware import auth_token


class KeystoneAuth(auth_token.AuthProtocol):
    """keystonemiddleware's auth_token, except for the version document
    (``GET /``), which clients and deployment tools read before they have
    a token.

    A request with a valid token reaches the app with the identity headers
    (``X-Project-Id``, ``X-User-Id``, ``X-Roles``) set by auth_token; one
    without is refused with 401 and a ``WWW-Authenticate`` header.
    """

    def __init__(self, application, conf):
        super().__init__(application, {'oslo_config_config': conf})
        self._unauthenticated = application

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') in ('', '/'):
            return self._unauthenticated(environ, start_response)
        return super().__call__(environ, start_response)
