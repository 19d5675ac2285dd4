"""Authentication middleware: ``NoAuth`` for ``[api] auth_strategy =
noauth``; ``keystone_auth.KeystoneAuth`` for ``keystone``."""

from cyquota.api import errors
from cyquota import exception

#: The longest user id the tables hold (``leases.user_id``,
#: ``device_consumers.user_id``); Keystone's are 64 characters at most.
MAX_USER_ID_LENGTH = 255


class NoAuth:
    """``[api] auth_strategy = noauth``: the identity headers are trusted as
    sent, but an ``X-User-Id`` longer than the tables hold is refused with
    400 naming the header, before any work, rather than failing (or being
    cut) where a lease or a claim writes it."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        user_id = environ.get('HTTP_X_USER_ID', '')
        if len(user_id) > MAX_USER_ID_LENGTH:
            refusal = exception.Invalid(
                reason='header X-User-Id must be at most %d characters, '
                       'got %d' % (MAX_USER_ID_LENGTH, len(user_id)))
            return errors.response_for(refusal, environ)(
                environ, start_response)
        return self.application(environ, start_response)
